// Whether the tests are built with AddressSanitizer (make test-sanitize: a Debug build whose checks
// run 10-30 times slower), for suites that draw fewer cases there.
#pragma once

namespace luminal::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif
#else
inline constexpr bool kSanitizerBuild = false;
#endif

}  // namespace luminal::testing
