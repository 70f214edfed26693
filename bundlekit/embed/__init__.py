"""Embedders: texts to vectors for recall by meaning (``protocol``: the contract; ``registry``: the
``bundlekit.embedders`` entry points; ``wordllama``: the offline default; ``openai``: an OpenAI-compatible
HTTP endpoint). See specs/memory.md, "Recall by meaning"."""
