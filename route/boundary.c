/* boundary.c — the registry of layer boundaries, areas and the
 * configuration keys each area pins (see boundary.h).
 *
 * The names here are the contract between the kernels, the evidence tables
 * under evidence/ and the planner: an evidence proof for a boundary that is
 * not listed here is rejected by the validator. The networks are described in
 * docs MODELS.md (segmentation-3.0 and the WeSpeaker ResNet34). */
#include "route/boundary.h"

#include <string.h>

static const char *const areas[] = {
    "fbank", "sincnet", "segconv", "lstm", "dense", "resnet", "resnet32", "pooling", "embedding",
};

static const gf_boundary boundaries[] = {
    /* segmentation: SincNet front end, two conv stages, the LSTM, the head */
    { "sincnet.conv0.abs_pool", "sincnet" },
    { "segconv.conv1", "segconv" },
    { "segconv.conv2", "segconv" },
    { "lstm.stack", "lstm" },
    { "dense.linear0", "dense" },
    { "dense.linear1", "dense" },
    { "dense.classifier", "dense" },
    /* embedding: Kaldi fbank, ResNet34 trunk, statistics pooling, seg_1 */
    { "fbank.dft", "fbank" },
    { "fbank.mel", "fbank" },
    { "resnet.conv1", "resnet" },
    { "resnet.layer1.0.conv1", "resnet" },
    { "resnet.layer1.0.conv2", "resnet" },
    { "resnet.layer1.1.conv1", "resnet" },
    { "resnet.layer1.1.conv2", "resnet" },
    { "resnet.layer1.2.conv1", "resnet" },
    { "resnet.layer1.2.conv2", "resnet" },
    { "resnet.layer2.0.conv1", "resnet" },
    { "resnet.layer2.0.conv2", "resnet" },
    { "resnet.layer2.0.shortcut", "resnet" },
    { "resnet.layer2.1.conv1", "resnet" },
    { "resnet.layer2.1.conv2", "resnet" },
    { "resnet.layer2.2.conv1", "resnet" },
    { "resnet.layer2.2.conv2", "resnet" },
    { "resnet.layer2.3.conv1", "resnet" },
    { "resnet.layer2.3.conv2", "resnet" },
    { "resnet.layer3.0.conv1", "resnet" },
    { "resnet.layer3.0.conv2", "resnet" },
    { "resnet.layer3.0.shortcut", "resnet" },
    { "resnet.layer3.1.conv1", "resnet" },
    { "resnet.layer3.1.conv2", "resnet" },
    { "resnet.layer3.2.conv1", "resnet" },
    { "resnet.layer3.2.conv2", "resnet" },
    { "resnet.layer3.3.conv1", "resnet" },
    { "resnet.layer3.3.conv2", "resnet" },
    { "resnet.layer3.4.conv1", "resnet" },
    { "resnet.layer3.4.conv2", "resnet" },
    { "resnet.layer3.5.conv1", "resnet" },
    { "resnet.layer3.5.conv2", "resnet" },
    { "resnet.layer4.0.conv1", "resnet" },
    { "resnet.layer4.0.conv2", "resnet" },
    { "resnet.layer4.0.shortcut", "resnet" },
    { "resnet.layer4.1.conv1", "resnet" },
    { "resnet.layer4.1.conv2", "resnet" },
    { "resnet.layer4.2.conv1", "resnet" },
    { "resnet.layer4.2.conv2", "resnet" },
    { "pooling.stats", "pooling" },
    { "embedding.seg_1", "embedding" },
};

/* Boundaries an area runs besides its own: each of these is a plain matrix
 * product (the DFT and mel projections as GEMMs against a fixed basis; seg_1
 * is a linear layer), which the dense area's GEMM covers. */
static const struct {
    const char *area;
    const char *boundary;
} also_runs[] = {
    { "dense", "fbank.dft" },
    { "dense", "fbank.mel" },
    { "dense", "embedding.seg_1" },
};

/* Areas that run every boundary of another: the same layers in another
 * module (resnet32: the ResNet trunk in math mode fp32, kernels/resnet/resnet32.cu,
 * beside resnet's tf32 kernels, so that either can change without the
 * other's evidence). */
static const struct {
    const char *area;
    const char *home;
} runs_all_of[] = {
    { "resnet32", "resnet" },
};

/* Configuration keys per area. A key may belong to several areas (a GEMM
 * tile is a GEMM tile); a proof pinning a key its module's area does not own
 * is rejected. */
static const struct {
    const char *area;
    const char *keys[10];
} config_keys[] = {
    { "fbank", { "frames_per_block", "dft_tile", "mel_tile", "threads" } },
    { "sincnet", { "filters_per_block", "samples_per_block", "taps_unroll", "threads" } },
    { "segconv", { "channels_per_block", "frames_per_block", "k_unroll", "threads" } },
    { "lstm",
      { "hidden_per_block", "persistent", "gate_fusion", "directions_fused", "cluster",
        "seqs_per_cluster", "threads" } },
    { "dense", { "tile_m", "tile_n", "tile_k", "stages", "split_k", "threads" } },
    { "resnet",
      { "tile_m", "tile_n", "tile_k", "stages", "warps", "split_k", "implicit_gemm", "halo" } },
    { "resnet32",
      { "tile_m", "tile_n", "tile_k", "stages", "warps", "split_k", "implicit_gemm", "halo" } },
    { "pooling", { "frames_per_block", "channels_per_block", "threads" } },
    { "embedding", { "tile_n", "split_k", "threads" } },
};

static const int production_batches[GF_N_PRODUCTION_BATCHES] = { 1, 8, GF_DEFAULT_BATCH };

size_t gf_boundary_count(void)
{
    return sizeof boundaries / sizeof boundaries[0];
}

const gf_boundary *gf_boundary_at(size_t i)
{
    return i < gf_boundary_count() ? &boundaries[i] : NULL;
}

const gf_boundary *gf_boundary_find(const char *name)
{
    for (size_t i = 0; i < gf_boundary_count(); i++)
        if (strcmp(boundaries[i].name, name) == 0)
            return &boundaries[i];
    return NULL;
}

size_t gf_area_count(void)
{
    return sizeof areas / sizeof areas[0];
}


bool gf_area_known(const char *area)
{
    for (size_t i = 0; i < gf_area_count(); i++)
        if (strcmp(areas[i], area) == 0)
            return true;
    return false;
}

bool gf_area_runs(const char *area, const char *boundary)
{
    const gf_boundary *b = gf_boundary_find(boundary);
    if (!b)
        return false;
    if (strcmp(b->area, area) == 0)
        return true;
    for (size_t i = 0; i < sizeof runs_all_of / sizeof runs_all_of[0]; i++)
        if (strcmp(runs_all_of[i].area, area) == 0 && strcmp(runs_all_of[i].home, b->area) == 0)
            return true;
    for (size_t i = 0; i < sizeof also_runs / sizeof also_runs[0]; i++)
        if (strcmp(also_runs[i].area, area) == 0 && strcmp(also_runs[i].boundary, boundary) == 0)
            return true;
    return false;
}

bool gf_area_config_key(const char *area, const char *key)
{
    for (size_t i = 0; i < sizeof config_keys / sizeof config_keys[0]; i++) {
        if (strcmp(config_keys[i].area, area) != 0)
            continue;
        for (size_t k = 0; k < 10 && config_keys[i].keys[k]; k++)
            if (strcmp(config_keys[i].keys[k], key) == 0)
                return true;
    }
    return false;
}

const char *gf_area_key_owner(const char *key)
{
    for (size_t i = 0; i < sizeof config_keys / sizeof config_keys[0]; i++)
        for (size_t k = 0; k < 10 && config_keys[i].keys[k]; k++)
            if (strcmp(config_keys[i].keys[k], key) == 0)
                return config_keys[i].area;
    return NULL;
}

const int *gf_production_batches(void)
{
    return production_batches;
}

bool gf_batch_is_production(int batch)
{
    for (size_t i = 0; i < GF_N_PRODUCTION_BATCHES; i++)
        if (production_batches[i] == batch)
            return true;
    return false;
}
