#pragma once
// The activation quantize inside its producer's store (internal to luminal/cuda): a cuda.QuantizeQ8
// that reads a producer's whole output in order becomes one kernel that computes the values and
// writes the blocks with QuantizeQ8's warp code (cuda.FusedQ8 for an elementwise region,
// elementwise.cpp; cuda.GemvKNQ8 for cuda.GemvKN, gemv_kn.cpp; cuda.AttentionQ8 for
// cuda.Attention, attention.cpp). Here: the rule they use, the statements that store a Q8_1
// block (QuantizeQ8's own too), and the order check.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "luminal/core/shape.hpp"
#include "luminal/egraph/rule.hpp"
#include "luminal/program/llir.hpp"

namespace luminal::cuda {

/// True when `v` has no base and reads element i at offset i for every flat index i: either
/// View::is_contiguous, or static dims (at most 2^16 elements) whose offsets, evaluated, are (a
/// reshape that merged axes reads in order through strides such as 128*(z/128) + z%128, which
/// View::is_contiguous compares structurally and does not recognise).
bool reads_in_order(const View& v);

/// Statements storing Q8_1 block `block` (an expression: the flat block index) of rows `row_len`
/// values long, from a warp whose lane `lane` holds the block's value `lane` in `value`: at
/// out + block * 36, or with `split` in the split layout (each row's 32-byte q blocks, then their
/// (d, s) pairs), as cuda.QuantizeQ8 writes them. `indent`: each line's leading spaces.
std::string q8_1_store(const std::string& value, const std::string& block, int64_t row_len,
                       bool split, const std::string& lane, const std::string& indent);

/// A Q8_1 producer's store of output `flat` (an expression: its flat index) whose value is
/// `value`, from a warp whose 32 lanes hold 32 consecutive outputs starting at a multiple of 32
/// (lane `lane` the output `flat` % 32): a block with q8_1_store in `n`'s layout (int_value 1:
/// split, rows of `n`'s last dim). Throws naming `n`'s op unless that dim is static and a multiple
/// of 32. No newline after the closing brace.
std::string q8_1_store_value(const LlirNode& n, const std::string& value, const std::string& flat,
                             const std::string& lane, const std::string& indent);

/// The rule `name`: for a cuda.QuantizeQ8 to Q8_1 (and with `q8_k` to Q8_K) whose one view reads
/// its input class whole and in order, each e-node of op `producer` with an f32 result in that
/// class gets a twin of op `fused` (the producer's attributes with the quantize's dtype, shape and
/// layout, int_value) merged into the quantize's class, where `keep` (if given) accepts the
/// twin's attributes and input dtypes.
Rule quantize_in_store_rule(
    std::string name, const OpDef* producer, const OpDef* fused, bool q8_k,
    std::function<bool(const Attrs&, const std::vector<DType>&)> keep = nullptr);

}  // namespace luminal::cuda
