# examples.awk — the examples of a Markdown file (README.md), written out for
# tests/integration/readme_examples.sh:  awk -v out=DIR -f examples.awk README.md
#
# An example is a code block (indented by four spaces, or fenced with ```)
# whose first line starts with "$ ". In it, a line starting with "$ " is a
# command (a line ending in "\" continues it on the next line), and the lines
# after a command, up to the next one, are what it prints. A line "..." stands
# for any number of lines. Code blocks without a prompt (synopses, build
# lines) are not examples.
#
# Output, one folder per heading that has examples, in the order of the file:
#   DIR/sNNN/heading       the heading's line
#   DIR/sNNN/cMMM.cmd      a command (without "$ "), as the shell reads it
#   DIR/sNNN/cMMM.exp      what the README says it prints
#   DIR/sNNN/cMMM.line     "LINE BLOCK": the README line of the command and of
#                          its block's first line

function strip(s) {                     # a block line without its indentation
    if (fenced)
        return s
    sub(/^(    |\t)/, "", s)
    return s
}

function flush_block(    i, line, cont, d) {
    if (nblock > 0 && substr(block[1], 1, 2) == "$ ") {
        if (!(heading_no in seen)) {
            seen[heading_no] = 1
            d = sprintf("%s/s%03d", out, heading_no)
            system("mkdir -p '" d "'")
            print heading > (d "/heading")
            close(d "/heading")
        }
        d = sprintf("%s/s%03d", out, heading_no)
        cont = 0
        for (i = 1; i <= nblock; i++) {
            line = block[i]
            if (cont) {                          # the rest of a command
                printf "\n%s", line > cmdfile
                cont = line ~ /\\$/
                if (!cont)
                    printf "\n" > cmdfile
            } else if (substr(line, 1, 2) == "$ ") {
                if (cmdfile != "") {
                    close(cmdfile); close(expfile)
                }
                ncmd++
                cmdfile = sprintf("%s/c%03d.cmd", d, ncmd)
                expfile = sprintf("%s/c%03d.exp", d, ncmd)
                printf "%s", substr(line, 3) > cmdfile
                printf "" > expfile
                printf "%d %d\n", blockline[i], blockline[1] > (sprintf("%s/c%03d.line", d, ncmd))
                close(sprintf("%s/c%03d.line", d, ncmd))
                cont = line ~ /\\$/
                if (!cont)
                    printf "\n" > cmdfile
            } else {
                print line > expfile
            }
        }
        if (cmdfile != "") {
            close(cmdfile); close(expfile)
            cmdfile = ""
        }
    }
    nblock = 0
    nblank = 0
}

BEGIN { heading_no = 0; heading = "(before the first heading)"; ncmd = 0; cmdfile = "" }

# Inside a fenced block: everything up to the closing fence.
fenced && /^ {0,3}```/ { flush_block(); fenced = 0; next }
fenced                 { nblock++; block[nblock] = $0; blockline[nblock] = NR; next }

/^ {0,3}```/ { flush_block(); fenced = 1; next }

# An indented block: blank lines inside it belong to it only when the block
# goes on after them.
/^(    |\t)/ && (nblock > 0 || prev_blank) {
    for (; nblank > 0; nblank--) {
        nblock++; block[nblock] = ""; blockline[nblock] = NR - nblank
    }
    nblock++; block[nblock] = strip($0); blockline[nblock] = NR
    prev_blank = 0
    next
}
/^[ \t]*$/ { if (nblock > 0) nblank++; prev_blank = 1; next }

{
    flush_block()
    prev_blank = 0
    if ($0 ~ /^#+ /) {
        heading_no++
        heading = $0
    }
}

END { flush_block() }
