# helpopts.sh — the options a program's --help names, and those a text names
# (sourced by man_pages.sh, completion.sh and install.sh).

# text_options: read text on stdin, print each option it names (-x, --long,
# both of --[no-]long), one per line, sorted and unique. An option is a dash
# and a letter, or two dashes and a word, not inside a word ("one-to-one",
# "N-1" are none).
text_options() {
    grep -oP '(?<![A-Za-z0-9_.-])-(-(\[no-\])?[A-Za-z][A-Za-z0-9-]*|[A-Za-z])(?![A-Za-z0-9])' |
        sed -E 's/^--\[no-\](.*)$/--\1\n--no-\1/' |
        LC_ALL=C sort -u
}

# help_options: read a --help text on stdin, print the options it defines:
# those of its usage lines (the lines that start with "usage:", "gpuflock" or
# "[", without their parenthesised asides) and the terms of its option lines
# (a line that starts with "-", up to the gap before the description or a
# ": "). Options only mentioned in a description (`the bench lock of --proof
# jobs`, `run by /bin/sh -c`) are left out.
help_options() {
    awk '{
        line = $0; sub(/^[ \t]+/, "", line)
        if (line ~ /^(usage:|gpuflock|\[)/) { gsub(/\([^)]*\)/, "", line); print line }
        else if (line ~ /^-/) { sub(/(  |: ).*/, "", line); print line }
    }' | text_options
}
