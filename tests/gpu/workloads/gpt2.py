"""Hugging Face GPT-2 (12 layers) from its config, random weights: batch 8 x 512 tokens, bf16
autocast, AdamW, 12 steps. The program that crashed under the tracer (issue 12, item 1)."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from common import report, torch_figures

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config()).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(12):
    ids = torch.randint(0, model.config.vocab_size, (8, 512), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
report("gpt2", loss=float(loss), **torch_figures(torch))
