"""Lightning's Trainer.fit on one GPU: bf16-mixed, AdamW, a validation loop, no logger or
checkpoints (what Lightning allocates itself: its precision plugin, the loops' buffers)."""
import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset

from common import report, torch_figures


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(),
                                       torch.nn.Linear(1024, 1024), torch.nn.GELU(),
                                       torch.nn.Linear(1024, 10))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.last_val = float(torch.nn.functional.cross_entropy(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


if __name__ == "__main__":
    torch.manual_seed(0)
    x, y = torch.randn(4096, 256), torch.randint(0, 10, (4096,))
    train = DataLoader(TensorDataset(x, y), batch_size=128, shuffle=True)
    val = DataLoader(TensorDataset(x[:512], y[:512]), batch_size=128)
    model = Classifier()
    trainer = L.Trainer(accelerator="gpu", devices=1, max_epochs=2, precision="bf16-mixed",
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model, train, val)
    report("lightning_fit", steps=trainer.global_step, val_loss=model.last_val,
           **torch_figures(torch))
