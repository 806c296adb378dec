"""Language models: ``load`` a Hugging Face folder or a GGUF file, then ``generate`` or ``chat``.

Generation runs in C++ (the token is sampled inside the graph; only its id crosses); the text
pieces stream to Python through a generator fed by a worker thread, so a consumer that stops
early (``break``, ``close()``) stops the generation at the next token.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from typing import Iterator, Optional, Sequence, Union

from . import _luminal

_DONE = object()

Prompt = Union[str, Sequence[int]]
Messages = Union[str, Sequence[dict], Sequence[tuple]]


def load(
    path: Union[str, os.PathLike],
    backend: Optional[_luminal.Backend] = None,
    *,
    context: int = 2048,
    max_step: int = 128,
    search_budget: Optional[float] = 20.0,
    **options,
) -> "Model":
    """Opens a Hugging Face folder (config.json, *.safetensors, tokenizer.json) or a .gguf file
    and compiles the model, as ``luminal run`` does.

    backend: ``luminal.cpu()`` or ``luminal.cuda()``; None takes the GPU when one is usable, else
    the CPU. context: the longest context (KV cache rows). max_step: the longest prefill chunk.
    search_budget: seconds each bucket's search may take on the first load (later loads read the
    compile cache). Other keywords are ``CompileOptions`` fields (search_graph_limit, seed,
    verbose, cache_dir, folding, ...); the defaults are the CLI's: 20 candidates, quiet unless
    stderr is a terminal.
    """
    if backend is None:
        backend = _luminal.cuda() if _luminal.cuda_available() else _luminal.cpu()
    opts = {"search_graph_limit": 20, "profile_timeout": 30.0, "verbose": sys.stderr.isatty()}
    if search_budget is not None and search_budget > 0:
        opts["time_budget"] = float(search_budget)
    opts.update(options)
    model = _luminal._Model(
        os.fspath(path), backend, int(context), int(max_step), _luminal.CompileOptions(**opts)
    )
    return Model(model, backend)


class Model:
    """A loaded causal LM. ``generate`` and ``chat`` yield text pieces as they are decoded (token
    ids for a model without a tokenizer); ``last`` holds the finished generation's ids, text and
    stop reason ('max_tokens', 'eos', 'stop_string', 'callback')."""

    def __init__(self, model: _luminal._Model, backend: _luminal.Backend):
        self._m = model
        self.backend = backend
        self.last: Optional[dict] = None
        self._busy = False
        self._conversation: list = []

    # ---- text ----
    def encode(self, text: str, add_special_tokens: bool = True) -> list:
        """Token ids of ``text`` (with BOS/EOS as the tokenizer adds them)."""
        return self._m.encode(text, add_special_tokens)

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """The text of token ids."""
        return self._m.decode(list(ids), skip_special_tokens)

    def _ids(self, prompt: Prompt) -> list:
        if isinstance(prompt, str):
            return self._m.encode(prompt, True)
        return [int(i) for i in prompt]

    # ---- generation ----
    def generate(
        self,
        prompt: Prompt,
        max_tokens: int = 64,
        *,
        temperature: float = 0.0,
        top_k: int = 0,
        top_p: float = 1.0,
        min_p: float = 0.0,
        repetition_penalty: float = 1.0,
        seed: int = 0,
        stop: Sequence[str] = (),
        ignore_eos: bool = False,
    ) -> Iterator[Union[str, int]]:
        """Appends ``prompt`` (text, encoded with the tokenizer's special tokens, or token ids) to
        the context and yields the generated text piece by piece (ids without a tokenizer).
        Greedy by default; temperature > 0 or a repetition penalty samples in the graph (the
        first such call loads the model again with the sampler). Stops at the model's EOS ids
        (unless ignore_eos), at a ``stop`` string, or after ``max_tokens``."""
        return self._stream(
            self._ids(prompt),
            max_tokens,
            dict(
                temperature=temperature,
                top_k=top_k,
                top_p=top_p,
                min_p=min_p,
                repetition_penalty=repetition_penalty,
                seed=seed,
                stop=list(stop),
                ignore_eos=ignore_eos,
            ),
        )

    def generate_ids(self, prompt: Prompt, max_tokens: int = 64, **sampling) -> list:
        """``generate`` without streaming: the generated token ids (EOS included when reached)."""
        for _ in self.generate(prompt, max_tokens, **sampling):
            pass
        return list(self.last["tokens"])

    def chat(
        self,
        message: Messages,
        max_tokens: int = 256,
        *,
        system: Optional[str] = None,
        **sampling,
    ) -> Iterator[str]:
        """One chat turn with the model's chat template, streamed. ``message`` is the user's text
        (the conversation so far is kept: each call adds a turn and the answer) or a whole list
        of messages ({'role': ..., 'content': ...} or (role, content)) that replaces it. The KV
        cache keeps the longest common prefix of what it holds and the rendered conversation
        (as ``luminal run --chat`` does)."""
        self._idle()
        if isinstance(message, str):
            if system is not None and not self._conversation:
                self._conversation.append(("system", system))
            self._conversation.append(("user", message))
        else:
            msgs = []
            for m in message:
                if isinstance(m, dict):
                    msgs.append((m["role"], m["content"]))
                else:
                    role, content = m
                    msgs.append((role, content))
            if system is not None:
                msgs.insert(0, ("system", system))
            self._conversation = msgs
        ids = self._m.encode(self._m.render_chat(self._conversation, True), False)
        settings = dict(
            temperature=sampling.pop("temperature", 0.0),
            top_k=sampling.pop("top_k", 0),
            top_p=sampling.pop("top_p", 1.0),
            min_p=sampling.pop("min_p", 0.0),
            repetition_penalty=sampling.pop("repetition_penalty", 1.0),
            seed=sampling.pop("seed", 0),
            stop=list(sampling.pop("stop", ())),
            ignore_eos=sampling.pop("ignore_eos", False),
        )
        if sampling:
            raise TypeError(f"chat() got unexpected keywords: {sorted(sampling)}")
        kept = self._m.continue_from(ids, settings["temperature"], settings["repetition_penalty"])
        return self._stream(ids[kept:], max_tokens, settings, conversation=True)

    def reset_chat(self) -> None:
        """Forgets the conversation and the context."""
        self._idle()
        self._conversation = []
        self._m.reset()

    def _idle(self) -> None:
        if self._busy:
            raise _luminal.Error(
                "the model is generating already; exhaust or close() the previous generator first"
            )

    def _stream(self, ids: list, max_tokens: int, settings: dict, conversation: bool = False):
        self._idle()
        self._m.check(
            ids,
            max_tokens,
            *(settings[k] for k in ("temperature", "top_k", "top_p", "min_p")),
            settings["repetition_penalty"],
            settings["seed"],
        )
        self._busy = True
        items: queue.Queue = queue.Queue()
        stopping = threading.Event()
        text_mode = self._m.has_tokenizer

        def on_token(token_id: int, text: str) -> bool:
            items.put(text if text_mode else token_id)
            return not stopping.is_set()

        def work():
            try:
                items.put(("result", self._m.generate(ids, max_tokens, on_token=on_token, **settings)))
            except BaseException as e:  # handed to the consumer, raised there
                items.put(("error", e))
            items.put(_DONE)

        worker = threading.Thread(target=work, name="luminal-generate", daemon=True)
        worker.start()
        return self._consume(items, stopping, worker, text_mode, conversation)

    def _consume(self, items, stopping, worker, text_mode, conversation):
        result = None
        error = None
        try:
            while True:
                try:
                    item = items.get(timeout=0.1)
                except queue.Empty:
                    continue
                if item is _DONE:
                    break
                if isinstance(item, tuple):
                    if item[0] == "result":
                        result = item[1]
                    else:
                        error = item[1]
                    continue
                if text_mode and item == "":
                    continue
                yield item
        finally:
            stopping.set()
            worker.join()
            self._busy = False
        if error is not None:
            raise error
        self.last = result
        if conversation and result is not None:
            self._conversation.append(("assistant", result["text"]))

    # ---- the rest of the C++ model ----
    def forward(self, ids: Sequence[int]):
        """Appends ids to the context; their logits as a [len(ids), vocab] float32 array."""
        self._idle()
        return self._m.forward([int(i) for i in ids])

    def reset(self) -> None:
        """Forgets the context (and the conversation of ``chat``)."""
        self.reset_chat()

    @property
    def context(self) -> int:
        """Tokens in the context (the KV cache)."""
        return self._m.context

    @property
    def vocab_size(self) -> int:
        return self._m.vocab_size

    @property
    def eos_ids(self) -> list:
        return self._m.eos_ids

    @property
    def model_type(self) -> str:
        return self._m.model_type

    @property
    def default_sampling(self) -> dict:
        """generation_config.json's sampling settings (greedy when it does not sample)."""
        return self._m.default_sampling

    def report(self) -> str:
        """The search reports of the model's session."""
        return self._m.report()

    def __repr__(self) -> str:
        return f"<luminal.Model {self._m.model_type} from {self._m.path!r} on {self.backend.name}>"
