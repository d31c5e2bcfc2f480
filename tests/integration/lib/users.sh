# users.sh — real users for the permission tests (sourced by jobs.bash and
# locktest.sh).

# make_users USER...: true once each exists (made with useradd, as root);
# false where that cannot be (not root, no useradd or runuser).
make_users() {
    [ "$(id -u)" = 0 ] && command -v useradd >/dev/null && command -v runuser >/dev/null ||
        return 1
    local u
    for u in "$@"; do
        id "$u" >/dev/null 2>&1 || useradd --system --no-create-home --shell /bin/sh "$u" ||
            return 1
    done
}

# need_users USER...: make_users, or skip the test (exit 77) saying why.
need_users() {
    make_users "$@" || { echo "skip: needs root, useradd and runuser to make the users $*"; exit 77; }
}
