/* test_card.c — card identity rendering (text, JSON) and described cards. */
#include "common/card.h"
#include "common/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

static gf_card_identity h200(void)
{
    gf_card_identity id;
    memset(&id, 0, sizeof id);
    id.index = 3;
    id.kind = GF_DEVICE_CUDA;
    strcpy(id.name, "NVIDIA H200");
    strcpy(id.uuid, "GPU-01234567-89ab-cdef-0123-456789abcdef");
    id.cc_major = 9;
    id.cc_minor = 0;
    id.sm_count = 132;
    id.total_mem = (size_t)150107209728ull;
    id.l2_bytes = 62914560;
    id.smem_optin = 232448;
    id.driver_version = 12080;
    return id;
}

static void test_text_names_every_field(void **state)
{
    (void)state;
    gf_card_identity id = h200();
    char *s = gf_card_format(&id);
    assert_non_null(strstr(s, "NVIDIA H200 cc 9.0, 132 SMs"));
    assert_non_null(strstr(s, "L2 60.0 MiB"));
    assert_non_null(strstr(s, "smem opt-in 227 KiB"));
    assert_non_null(strstr(s, "driver 12.8"));
    assert_non_null(strstr(s, id.uuid));
    free(s);
}

static void test_json_round_trip(void **state)
{
    (void)state;
    gf_card_identity id = h200(), back;
    json_object *o = gf_card_to_json(&id);
    const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    assert_non_null(strstr(text, "\"cc\":\"9.0\""));
    json_object *parsed = json_tokener_parse(text);
    char why[128] = "";
    assert_int_equal(gf_card_from_json(parsed, &back, why, sizeof why), 0);
    assert_memory_equal(&id, &back, sizeof id);
    json_object_put(parsed);
    json_object_put(o);

    parsed = json_tokener_parse("{\"name\":\"X\",\"cc\":\"nine\",\"sms\":4}");
    assert_int_equal(gf_card_from_json(parsed, &back, why, sizeof why), GF_EINVAL);
    assert_non_null(strstr(why, "cc"));
    json_object_put(parsed);
}

static void test_described_card(void **state)
{
    (void)state;
    gf_card_identity id;
    assert_int_equal(gf_card_parse_spec("NVIDIA H200:9.0:132", &id), 0);
    assert_string_equal(id.name, "NVIDIA H200");
    assert_int_equal(gf_card_arch(&id), 90);
    assert_int_equal(id.sm_count, 132);
    assert_int_equal(gf_card_parse_spec("odd:name:8.6:84", &id), 0);
    assert_string_equal(id.name, "odd:name");
    assert_int_equal(gf_card_arch(&id), 86);
    assert_int_equal(gf_card_parse_spec("NVIDIA H200:9:132", &id), GF_EINVAL);
    assert_int_equal(gf_card_parse_spec("NVIDIA H200:9.0:", &id), GF_EINVAL);
    assert_int_equal(gf_card_parse_spec(":9.0:132", &id), GF_EINVAL);
    assert_int_equal(gf_card_parse_spec("9.0:132", &id), GF_EINVAL);
    assert_int_equal(gf_card_parse_spec("NVIDIA H200:9.0:-1", &id), GF_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_names_every_field),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_described_card),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
