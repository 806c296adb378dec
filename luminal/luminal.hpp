#pragma once
// One include for the public API.
#include "luminal/compiler/options.hpp"
#include "luminal/core/dtype.hpp"
#include "luminal/core/error.hpp"
#include "luminal/core/expr.hpp"
#include "luminal/core/shape.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/runtime/reference.hpp"
#include "luminal/runtime/session.hpp"
