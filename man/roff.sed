# roff.sed — two fixes of the roff scdoc writes (the Makefile's man rule).
#
# groff's man macros turn hyphenation back on at .TH: a .nh after it keeps
# words such as --yieldable whole.
/^\.TH /a\
.nh
# Requests are left alone.
/^\./b
# scdoc writes "-" as it is: a hyphen, after which groff may break a line
# (--save-<break>intermediates). Text gets "\-", the minus sign options are
# made of (both show as "-"); a "-" inside an escape's argument (\h'-04' of a
# list's bullet) stays.
s/^-/\\-/
:minus
s/\([^'\\]\)-/\1\\-/
t minus
