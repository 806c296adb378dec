// `luminal tokenize DIR "text" [--special]`: one line per token, id<TAB>piece (control
// characters escaped).
#include <iostream>
#include <memory>

#include "apps/luminal/commands.hpp"
#include "luminal/core/error.hpp"
#include "luminal/io/tokenizer.hpp"

namespace luminal::cli {

void add_tokenize(CLI::App& app) {
  struct Opts {
    std::string dir;
    std::string text;
    bool special = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "tokenize", "Tokenize TEXT with the model's tokenizer.json; prints id<TAB>piece per token");
  cmd->add_option("DIR", o->dir, "model folder holding tokenizer.json")->required();
  cmd->add_option("TEXT", o->text, "the text to tokenize")->required();
  cmd->add_flag("--special", o->special,
                "add the special tokens the tokenizer adds (e.g. BOS), as for model input");
  cmd->callback([o] {
    const std::filesystem::path d(o->dir);
    require_model_folder(d);
    if (!std::filesystem::exists(d / "tokenizer.json")) {
      throw Error((d / "tokenizer.json").string() +
                  ": not found; `luminal tokenize` needs the model's Hugging Face fast tokenizer "
                  "(tokenizer.json), which model repositories ship next to config.json");
    }
    io::Tokenizer tok = io::Tokenizer::from_folder(d);
    for (int32_t id : tok.encode(o->text, o->special)) {
      std::cout << id << "\t" << escape(tok.token(id)) << "\n";
    }
  });
}

}  // namespace luminal::cli
