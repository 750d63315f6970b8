"""PEFT LoRA fine-tuning of a Hugging Face GPT-2 (6 layers, random weights, from its config):
adapters on the attention projections, the base frozen, activation checkpointing (non-reentrant),
bf16 autocast, AdamW over the adapters only, 10 steps of batch 8 x 256 tokens."""
import torch
from peft import LoraConfig, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

from common import lm_steps, report, torch_figures

torch.manual_seed(0)
base = GPT2LMHeadModel(GPT2Config(n_layer=6)).cuda()
base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=["c_attn", "c_proj"],
                                        fan_in_fan_out=True, lora_dropout=0.05))
model.train()
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
loss = lm_steps(torch, model, opt, base.config.vocab_size, 10, 8, 256)
trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
report("peft_lora", loss=loss, trainable=trainable, **torch_figures(torch))
