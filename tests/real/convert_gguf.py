"""Convert a GGUF model file into a Hugging Face model folder that vLLM loads.

    python convert_gguf.py MODEL.gguf OUT_DIR

transformers reads the GGUF's weights (dequantized to float32: vLLM's CPU backend has no
kernels for GGUF's Q4_1 blocks), its config and its tokenizer, chat template included, and
writes them as safetensors, config.json and tokenizer.json. Offline: nothing is downloaded.
"""

import pathlib
import sys

from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig


def main() -> int:
    gguf = pathlib.Path(sys.argv[1]).resolve()
    out = pathlib.Path(sys.argv[2])
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if not tokenizer.chat_template:
        print(f"{gguf} carries no chat template", file=sys.stderr)
        return 1
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent,
        gguf_file=gguf.name,
        quantization_config=GgufConfig(dequantize=True),
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
