// `luminal tokenize MODEL "text" [--special]`: one line per token, id<TAB>piece (control
// characters escaped). MODEL is a Hugging Face folder (its tokenizer.json) or a .gguf file (the
// tokenizer in its metadata, as `run` reads it).
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "apps/luminal/commands.hpp"
#include "luminal/core/error.hpp"
#include "luminal/io/gguf.hpp"
#include "luminal/io/gguf_model.hpp"
#include "luminal/io/tokenizer.hpp"

namespace luminal::cli {

namespace {

// The tokenizer of a .gguf file; errors name the file and say what is missing.
io::Tokenizer gguf_file_tokenizer(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    throw Error(file.string() + ": no such file; give a .gguf file or a Hugging Face model folder");
  if (!std::filesystem::is_regular_file(file, ec))
    throw Error(file.string() + ": not a file; give a .gguf file or a Hugging Face model folder");
  const io::GgufFile f = io::GgufFile::open(file);
  if (!f.contains("tokenizer.ggml.model"))
    throw Error(file.string() +
                ": the file has no tokenizer (no tokenizer.ggml.model key); `luminal tokenize` "
                "needs a GGUF written with its vocabulary, as llama.cpp's converter writes it");
  return io::gguf_tokenizer(f);
}

}  // namespace

void add_tokenize(CLI::App& app) {
  struct Opts {
    std::string dir;
    std::string text;
    bool special = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "tokenize",
      "Tokenize TEXT with the model's tokenizer (tokenizer.json, or a GGUF file's); prints "
      "id<TAB>piece per token");
  cmd->add_option("DIR", o->dir, "model folder holding tokenizer.json, or a .gguf file")
      ->required();
  cmd->add_option("TEXT", o->text, "the text to tokenize")->required();
  cmd->add_flag("--special", o->special,
                "add the special tokens the tokenizer adds (e.g. BOS), as for model input");
  cmd->callback([o] {
    const std::filesystem::path d(o->dir);
    std::optional<io::Tokenizer> tok;
    std::error_code ec;
    if (d.extension() == ".gguf" || std::filesystem::is_regular_file(d, ec)) {
      tok = gguf_file_tokenizer(d);
    } else {
      require_model_folder(d);
      if (!std::filesystem::exists(d / "tokenizer.json")) {
        throw Error((d / "tokenizer.json").string() +
                    ": not found; `luminal tokenize` needs the model's Hugging Face fast "
                    "tokenizer (tokenizer.json), which model repositories ship next to "
                    "config.json, or a .gguf file");
      }
      tok = io::Tokenizer::from_folder(d);
    }
    for (int32_t id : tok->encode(o->text, o->special)) {
      std::cout << id << "\t" << escape(tok->token(id)) << "\n";
    }
  });
}

}  // namespace luminal::cli
