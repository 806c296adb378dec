// luminal/io/chat_template.hpp: a model's own Jinja chat template, rendered as transformers'
// apply_chat_template renders it. Run: snippet_io_chat_template [model folder] (without one, the
// built-in Llama 3 template).
#include <iostream>
#include <string>

#include "luminal/io/chat_template.hpp"
#include "snippet.hpp"

int main(int argc, char** argv) {
  auto tpl = argc > 1 ? luminal::io::ChatTemplate::from_folder(argv[1])
                      : luminal::io::ChatTemplate::builtin("llama3");
  std::string prompt = tpl.render({{"system", "Be brief."}, {"user", "Hi!"}},
                                  /*add_generation_prompt=*/true, tpl.special_tokens());
  std::cout << prompt << "\n";
  expect(prompt.find("Hi!") != std::string::npos, "the user's message is in the prompt");
}
