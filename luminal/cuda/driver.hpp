#pragma once
// The CUDA driver API, loaded at run time (internal to luminal/cuda).
//
// Nothing links against libcuda: binaries start on machines without a GPU or driver, and only
// asking for CUDA there fails, with a message that says why. cuda_api() gives the loaded
// functions (it throws luminal::Error when they cannot be used; driver_available() asks without
// throwing). Every call goes through check(), which names the call and the driver's error name.
// Example: examples/snippets/cuda/driver.cpp (the devices counted, or why there are none).
#include <cuda.h>

#include <string>

namespace luminal::cuda {

// clang-format off
#define LUMINAL_CUDA_FUNCTIONS(X) \
  X(cuInit) \
  X(cuDriverGetVersion) \
  X(cuDeviceGet) \
  X(cuDeviceGetCount) \
  X(cuDeviceGetName) \
  X(cuDeviceGetAttribute) \
  X(cuDeviceTotalMem) \
  X(cuDevicePrimaryCtxRetain) \
  X(cuDevicePrimaryCtxRelease) \
  X(cuCtxSetCurrent) \
  X(cuCtxGetCurrent) \
  X(cuCtxSynchronize) \
  X(cuStreamCreate) \
  X(cuStreamDestroy) \
  X(cuStreamSynchronize) \
  X(cuEventCreate) \
  X(cuEventDestroy) \
  X(cuEventRecord) \
  X(cuEventSynchronize) \
  X(cuStreamWaitEvent) \
  X(cuEventQuery) \
  X(cuEventElapsedTime) \
  X(cuModuleLoadData) \
  X(cuModuleUnload) \
  X(cuModuleGetFunction) \
  X(cuLaunchKernel) \
  X(cuLaunchKernelEx) \
  X(cuFuncGetAttribute) \
  X(cuMemAlloc) \
  X(cuMemFree) \
  X(cuMemAllocHost) \
  X(cuMemFreeHost) \
  X(cuMemcpyHtoDAsync) \
  X(cuMemcpyDtoHAsync) \
  X(cuMemcpyDtoDAsync) \
  X(cuMemsetD8Async) \
  X(cuMemsetD32Async) \
  X(cuMemGetInfo) \
  X(cuPointerGetAttribute) \
  X(cuGetErrorName) \
  X(cuGetErrorString) \
  X(cuGraphCreate) \
  X(cuGraphDestroy) \
  X(cuGraphAddKernelNode) \
  X(cuGraphAddEmptyNode) \
  X(cuGraphDestroyNode) \
  X(cuGraphGetNodes) \
  X(cuGraphNodeGetType) \
  X(cuGraphNodeGetDependentNodes) \
  X(cuGraphExecUpdate) \
  X(cuStreamBeginCaptureToGraph) \
  X(cuStreamEndCapture) \
  X(cuStreamGetCaptureInfo) \
  X(cuGraphAddDependencies) \
  X(cuGraphAddEventRecordNode) \
  X(cuGraphKernelNodeSetParams) \
  X(cuGraphKernelNodeGetParams) \
  X(cuGraphKernelNodeGetAttribute) \
  X(cuGraphInstantiateWithFlags) \
  X(cuGraphExecDestroy) \
  X(cuGraphExecKernelNodeSetParams) \
  X(cuGraphUpload) \
  X(cuGraphLaunch)
// clang-format on

struct CudaApi {
#define LUMINAL_CUDA_DECLARE(name) decltype(&::name) name = nullptr;
  LUMINAL_CUDA_FUNCTIONS(LUMINAL_CUDA_DECLARE)
#undef LUMINAL_CUDA_DECLARE
};

/// The loaded driver (cuInit done). Throws luminal::Error saying why CUDA cannot be used: no
/// libcuda.so.1, a driver too old, or no device.
const CudaApi& cuda_api();
/// True when cuda_api() would succeed; otherwise `why` (if given) gets its message.
bool driver_available(std::string* why = nullptr);

/// Makes `ctx` current on the calling thread (cheap when it already is: the thread remembers the
/// context it last made current here).
void make_current(const CudaApi& cu, CUcontext ctx);

/// Throws luminal::Error "cuda: <call> failed: <CUDA_ERROR_NAME> (<description>)" unless
/// `r` is CUDA_SUCCESS.
void check(CUresult r, const char* call);

}  // namespace luminal::cuda
