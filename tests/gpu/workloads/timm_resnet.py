"""timm ResNet-50 training: batch 64 of 224 x 224, channels_last, bf16 autocast, SGD, 10 steps."""
import timm
import torch

from common import report, torch_figures

torch.manual_seed(0)
model = timm.create_model("resnet50", num_classes=1000).cuda().to(memory_format=torch.channels_last)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()
for step in range(10):
    x = torch.randn(64, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (64,), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
report("timm_resnet50", loss=float(loss), **torch_figures(torch))
