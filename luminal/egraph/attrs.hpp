#pragma once
// Attrs: the typed attribute record of an e-node / LLIR node.
//
// Every op carries its output dtype and shape and, per child, the View it reads that child
// through. HLIR fields (label, constant value, iota, axis) sit beside them; a backend op puts
// its own typed record in `payload` (a Payload subclass with hash/equality/printing).
//
// Attrs are interned per e-graph (AttrId), so two e-nodes with equal attributes share one record
// and compare by id.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/core/dtype.hpp"
#include "luminal/core/expr.hpp"
#include "luminal/core/shape.hpp"

namespace luminal {

/// A backend op's own fields. Subclasses implement hash/equality/printing and a serialised form
/// (one line, no tabs) that their backend reads back by kind (Backend::read_payload).
struct Payload {
  virtual ~Payload() = default;
  /// The name it serialises under ("fused_program"), the same in every process.
  virtual std::string_view kind() const = 0;
  /// An exact, single-line text form (no tabs or newlines).
  virtual std::string serialize() const = 0;
  /// Stable across processes and builds (no std::hash or typeid).
  virtual size_t hash() const = 0;
  /// `o` has the same dynamic type (checked by the caller).
  virtual bool equals(const Payload& o) const = 0;
  virtual std::string to_string() const = 0;
};

struct Attrs {
  DType dtype = DType::F32;
  Shape shape;              // output shape (the output is contiguous)
  std::vector<View> views;  // how each child is read, one per child

  std::string label;      // Input, Output
  bool persist = false;   // Input, Output
  double value = 0;       // Constant (floats, Bool)
  int64_t int_value = 0;  // Constant (integers)
  Expr iota_expr;         // Iota
  Expr iota_len;          // Iota
  int axis = 0;           // SumReduce, MaxReduce

  std::shared_ptr<const Payload> payload;  // backend ops

  /// Stable across processes and builds (the compile cache relies on it).
  size_t hash() const;
  bool operator==(const Attrs& o) const;
  /// Every field but `label`.
  bool equal_without_label(const Attrs& o) const;
  /// Hash that ignores `label`: equal for the same op reading different weights.
  size_t structural_hash() const;
  /// Exact text of every field (Exprs in write_expr form, floats as bits, the payload
  /// serialised), `label` only when `with_label`: equal texts mean equal attributes.
  std::string key_text(bool with_label) const;
  /// "f32[s, 4] (a: [s, 4] {4*z, z}) axis=1 ..." (only the fields that are set).
  std::string to_string() const;
};

}  // namespace luminal
