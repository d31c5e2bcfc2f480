/* lsa.h — linear sum assignment (the Hungarian problem), rectangular.
 *
 * Solved by shortest augmenting paths (D. F. Crouse, "On implementing 2D
 * rectangular assignment algorithms", IEEE TAES 52(4), 2016), the method
 * scipy.optimize.linear_sum_assignment uses, with the same tie-breaking, so
 * equal-cost cases resolve the same way. The diarization pipeline uses it
 * to give each window's local speakers distinct clusters; DER scoring can
 * use it for the optimal speaker mapping. */
#ifndef GF_LSA_H
#define GF_LSA_H

#include <stdbool.h>
#include <stddef.h>

/* cost: nr x nc (finite). Assigns min(nr, nc) rows to distinct columns
 * minimising (or, with maximize, maximising) the total. col_for_row[i] is
 * the column of row i, or -1 for a row left out (nr > nc). Returns 0, or -1
 * if the matrix holds a non-finite value. */
int gf_lsa_solve(const double *cost, size_t nr, size_t nc, bool maximize, int *col_for_row);

#endif
