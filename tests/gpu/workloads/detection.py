"""torchvision Faster R-CNN (MobileNetV3-Large FPN backbone, no pretrained weights): images of
varying sizes (the allocator's cache sees a new shape every step), cuDNN autotuning, fp16 autocast
with a GradScaler, SGD, 6 training steps, then inference on two images (torchvision's NMS and
RoIAlign kernels)."""
import torch
import torchvision

from common import report, torch_figures

torch.manual_seed(0)
torch.backends.cudnn.benchmark = True
model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_fpn(
    weights=None, weights_backbone=None, num_classes=5).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.005, momentum=0.9)
scaler = torch.amp.GradScaler("cuda")


def batch(n, step):
    images, targets = [], []
    for i in range(n):
        h, w = 320 + 32 * ((step + i) % 4), 400 + 48 * ((step * 3 + i) % 3)
        images.append(torch.rand(3, h, w, device="cuda"))
        xy = torch.rand(3, 2, device="cuda") * torch.tensor([w / 2, h / 2], device="cuda")
        wh = 16 + torch.rand(3, 2, device="cuda") * 64
        targets.append({"boxes": torch.cat([xy, xy + wh], 1),
                        "labels": torch.randint(1, 5, (3,), device="cuda")})
    return images, targets


model.train()
for step in range(6):
    images, targets = batch(4, step)
    with torch.autocast("cuda", dtype=torch.float16):
        losses = model(images, targets)
        loss = sum(losses.values())
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad(set_to_none=True)
model.eval()
with torch.no_grad():
    out = model(batch(2, 7)[0])
report("detection", loss=float(loss), detections=sum(len(o["boxes"]) for o in out),
       **torch_figures(torch))
