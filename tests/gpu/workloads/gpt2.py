"""Hugging Face GPT-2 (12 layers) from its config, random weights: batch 8 x 512 tokens, bf16
autocast, AdamW, 12 steps. The program that crashed under the tracer (issue 12, item 1)."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from common import lm_steps, report, torch_figures

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config()).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
loss = lm_steps(torch, model, opt, model.config.vocab_size, 12, 8, 512)
report("gpt2", loss=loss, **torch_figures(torch))
