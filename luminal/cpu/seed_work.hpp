#pragma once
// The CPU seed's price of the arithmetic in a fused or row kernel or an elementwise primitive
// (internal; CpuBackend::seed_work). The fewest-kernels seed inlines a region into every kernel
// that reads it when that saves a kernel; a region of heavy arithmetic (the sampler's counter hash:
// a dozen 64-bit remainders an element over the vocabulary) then runs once per reader. Its
// price, about the microseconds it takes on two cores in kernel units (a kernel's start costs
// about a microsecond), makes the seed store such a value once instead.
#include <cstdint>

namespace luminal {
class EGraph;
}

namespace luminal::cpu {

/// A cpu.Fused or cpu.Row e-node's elements (constant shapes; 0 otherwise) times its program's
/// instructions' cost an element, or an elementwise HLIR primitive's elements times its op's, in
/// kernels (CpuBackend::seed_work); 0 for other ops.
double region_seed_work(const EGraph& eg, uint32_t enode);

}  // namespace luminal::cpu
