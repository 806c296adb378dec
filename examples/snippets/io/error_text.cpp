// luminal/io/error_text.hpp: how io's readers write names and shapes from a file into errors.
#include <string>

#include "luminal/io/error_text.hpp"
#include "snippet.hpp"

using namespace luminal::io;

int main() {
  expect(printable("a\nb") == "'a\\x0ab'", "quoted, control bytes escaped");
  expect(printable(std::string(300, 'x')) == "'" + std::string(200, 'x') + "...'",
         "cut after 200 characters");
  expect(shape_str({2, 3}) == "[2, 3]", "a shape");
}
