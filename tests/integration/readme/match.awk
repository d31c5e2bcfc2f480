# match.awk — does what a command printed match what the README says?
#   awk -f match.awk EXPECTED ACTUAL      exit 0: it matches, 1: it does not
# Both files are normalised already. Lines are compared whole and in order; a
# line "..." in EXPECTED stands for any number of lines (none included).
# Trailing blank lines are left out on both sides (a README block cannot end
# in one).

FILENAME == ARGV[1] { e[++ne] = $0; next }
{ a[++na] = $0 }

# Does the run of expected lines from..to match actual lines at pos?
function at(from, to, pos,    k) {
    if (pos + (to - from) > na)
        return 0
    for (k = from; k <= to; k++)
        if (e[k] != a[pos + k - from])
            return 0
    return 1
}

END {
    while (ne > 0 && e[ne] ~ /^[ \t]*$/) ne--
    while (na > 0 && a[na] ~ /^[ \t]*$/) na--
    pos = 1            # the first actual line not matched yet
    i = 1
    free = 0           # whether a "..." came before the current run
    while (i <= ne) {
        if (e[i] == "...") { free = 1; i++; continue }
        j = i
        while (j < ne && e[j + 1] != "...") j++
        len = j - i + 1
        if (!free) {
            if (!at(i, j, pos)) exit 1
            pos += len
        } else if (j == ne) {            # the last run ends where the output ends
            p = na - len + 1
            if (p < pos || !at(i, j, p)) exit 1
            pos = na + 1
        } else {                         # elsewhere, the first place it fits
            for (p = pos; p + len - 1 <= na; p++)
                if (at(i, j, p)) break
            if (p + len - 1 > na) exit 1
            pos = p + len
        }
        free = 0
        i = j + 1
    }
    exit (free || pos == na + 1) ? 0 : 1
}
