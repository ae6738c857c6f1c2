#pragma once
// The pieces of computeErrorHistogram (metrics.h) that the fused comparison reuses, so that
// both paths bin every element by the same code. Private to core.
#include "ttrace/compare/histogram.h"

#include <cstddef>

namespace ttrace {

// Bins edges 1e-6 .. 1e6 tolerance units, all counts zero.
ErrorHistogram emptyErrorHistogram();
void addHistograms(ErrorHistogram& into, const ErrorHistogram& other);

// Adds `sum` the squares of the finite values of ref[0, count), one by one in index order:
// the histogram's RMS is defined by exactly this order.
double addFiniteSquares(double sum, const double* ref, std::size_t count);

// Counts the errors |cand[i] - ref[i]| of `count` elements in units of `unit` (one tolerance
// unit per element; zero or negative: every nonzero error in the top bin).
void addErrors(ErrorHistogram& h, const double* ref, const double* cand, std::size_t count,
               double unit);

} // namespace ttrace
