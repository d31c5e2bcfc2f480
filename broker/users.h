/* users.h — who a uid is, for the broker: its name and its supplementary
 * groups, looked up through NSS (getpwuid_r, getgrouplist) and kept for a
 * few seconds.
 *
 * Every submit needs the submitter's name and every job start its groups.
 * With NSS modules such as systemd's, a lookup is a round trip to another
 * process and reads /etc/passwd and /etc/group; one job per CLI call paid
 * it twice. Entries expire after ttl_ms, so a change of group membership
 * reaches new jobs within that time. */
#ifndef GF_USERS_H
#define GF_USERS_H

#include <stddef.h>
#include <stdint.h>

typedef struct gf_users gf_users;

/* A cache whose entries live ttl_ms (0: every call looks up afresh). */
gf_users *gf_users_new(uint64_t ttl_ms);
void gf_users_destroy(gf_users **self_p);

/* The name of uid (whose process runs with gid: the entry is shared with
 * gf_users_groups), or its number as text when NSS does not know it: a new
 * string, the caller frees it. */
char *gf_users_name(gf_users *self, uint32_t uid, uint32_t gid);

/* The supplementary groups of uid as its passwd entry and gid give them
 * (at least gid): a new array in *out of *n ids, the caller frees it. */
void gf_users_groups(gf_users *self, uint32_t uid, uint32_t gid, uint32_t **out, size_t *n);

#endif
