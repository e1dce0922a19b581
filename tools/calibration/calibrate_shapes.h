#pragma once

// `clustersim calibrate shapes SCENARIO... [--out FILE]`: the distinct GEMM shapes of the scenarios'
// transformer ops (forward, data-gradient and weight-gradient GEMMs of a layer, the LM head), per
// rank under each scenario's tensor/context parallelism, as the calibrator's shapes file
// (tools/calibrator/gemm_shapes.h: "M N K dtype label" a line) in the orientation of the cuBLAS call
// a framework makes (column-major: M = the op's n, N = the op's m, K = k). Batched GEMMs (naive attention) are
// listed as one GEMM of the batch's size.

#include <ostream>
#include <string>
#include <vector>

namespace clustersim {

// Writes the shapes file of `scenarios` to `out`. Throws InputError for invalid scenarios.
void write_calibration_shapes(const std::vector<std::string>& scenarios, std::ostream& out);

}  // namespace clustersim
