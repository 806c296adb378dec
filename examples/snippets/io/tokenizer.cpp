// luminal/io/tokenizer.hpp: a Hugging Face tokenizer.json (+ tokenizer_config.json): encode,
// decode, and decode token by token without ever printing half a UTF-8 character.
// Run: snippet_io_tokenizer <model folder>.
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "luminal/io/tokenizer.hpp"
#include "snippet.hpp"

int main(int argc, char** argv) {
  const char* folder = argc > 1 ? argv[1] : "Llama-3.2-1B/";
  auto tok = luminal::io::Tokenizer::from_folder(folder);
  std::vector<int32_t> ids = tok.encode("Hello world", /*add_special_tokens=*/true);
  std::string text = tok.decode(ids, /*skip_special_tokens=*/true);
  expect(text == "Hello world", "decode(encode(text)) is the text");
  auto stream = tok.stream_decoder(/*skip_special_tokens=*/true);  // token by token
  std::string streamed;
  for (int32_t id : ids)
    streamed += stream.push(id);
  streamed += stream.flush();
  std::cout << streamed << "\n";
  expect(streamed == text, "streamed pieces add up to the text");
}
