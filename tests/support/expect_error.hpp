#pragma once
// Test helpers: assertions that a call throws luminal::Error with a message that says what failed.
#include <gtest/gtest.h>

#include <cctype>
#include <initializer_list>
#include <string>
#include <string_view>

#include "luminal/luminal.hpp"

namespace luminal::testing {

/// Expects f() to throw luminal::Error whose message contains `needle`.
template <class F>
inline void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected luminal::Error mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

/// Expects f() to throw luminal::Error whose message contains every one of `parts`.
template <class F>
inline void expect_error(F&& f, std::initializer_list<std::string_view> parts) {
  try {
    f();
    ADD_FAILURE() << "no luminal::Error thrown (expected one mentioning '" << *parts.begin()
                  << "')";
  } catch (const Error& e) {
    std::string m = e.what();
    for (std::string_view p : parts)
      EXPECT_NE(m.find(p), std::string::npos) << "message '" << m << "' lacks '" << p << "'";
  }
}

/// True when `op` occurs in `msg` as a whole word (not inside a longer identifier).
inline bool names_op(const std::string& msg, const std::string& op) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = msg.find(op); at != std::string::npos; at = msg.find(op, at + 1)) {
    const size_t end = at + op.size();
    if ((at == 0 || !word(msg[at - 1])) && (end == msg.size() || !word(msg[end]))) return true;
  }
  return false;
}

/// Expects fn() to throw luminal::Error whose message names `op`.
template <class F>
inline void expect_error_naming(F&& fn, const std::string& op) {
  try {
    fn();
    ADD_FAILURE() << "expected an error naming '" << op << "'";
  } catch (const Error& e) {
    EXPECT_TRUE(names_op(e.what(), op)) << "'" << op << "' not named in: " << e.what();
  }
}

}  // namespace luminal::testing
