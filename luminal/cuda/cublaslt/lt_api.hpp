#pragma once
// cuBLASLt, loaded at run time like the driver and NVRTC: the project links no CUDA library, so
// its binaries start on machines without a GPU or without cuBLAS. Only the header's types and
// declarations are used at build time. lt_api() gives the loaded functions, or null with the
// reason; check_lt() names a failed call and its status.
// Example: examples/snippets/cuda/lt_api.cpp (a handle created and destroyed).
//
// The library is searched in this order: $LUMINAL_CUBLASLT (a path; "off" disables cuBLASLt),
// libcublasLt.so.13, $CUDA_HOME or $CUDA_PATH /lib64/libcublasLt.so.13,
// /usr/local/cuda/lib64/libcublasLt.so.13, /usr/local/cuda-13.0/lib64/libcublasLt.so.13.
#include <cublasLt.h>

#include <string>

namespace luminal::cuda {

// clang-format off
#define LUMINAL_CUBLASLT_FUNCTIONS(X) \
  X(cublasLtCreate) \
  X(cublasLtDestroy) \
  X(cublasLtGetVersion) \
  X(cublasLtGetStatusName) \
  X(cublasLtGetStatusString) \
  X(cublasLtMatmulDescCreate) \
  X(cublasLtMatmulDescDestroy) \
  X(cublasLtMatmulDescSetAttribute) \
  X(cublasLtMatrixLayoutCreate) \
  X(cublasLtMatrixLayoutDestroy) \
  X(cublasLtMatrixLayoutSetAttribute) \
  X(cublasLtMatmulPreferenceCreate) \
  X(cublasLtMatmulPreferenceDestroy) \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatmulAlgoGetHeuristic) \
  X(cublasLtMatmulAlgoCheck) \
  X(cublasLtMatmul)
// clang-format on

struct LtApi {
#define LUMINAL_LT_DECLARE(name) decltype(&::name) name = nullptr;
  LUMINAL_CUBLASLT_FUNCTIONS(LUMINAL_LT_DECLARE)
#undef LUMINAL_LT_DECLARE
  size_t version = 0;   // cublasLtGetVersion(): 130100 for 13.1.0
  std::string library;  // the file that was loaded
};

/// The loaded cuBLASLt, or null with `why` (if given) saying what is missing or that
/// LUMINAL_CUBLASLT=off disabled it. Loaded once per process.
const LtApi* lt_api(std::string* why = nullptr);

/// Throws luminal::Error "cuBLASLt: <call> failed: <status name> (<status string>)" unless `s`
/// is CUBLAS_STATUS_SUCCESS.
void check_lt(const LtApi& lt, cublasStatus_t s, const char* call);

}  // namespace luminal::cuda
