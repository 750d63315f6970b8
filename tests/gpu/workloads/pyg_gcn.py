"""torch-geometric: a two-layer GCN trained on a random graph of 50,000 nodes and 500,000 edges
(PyG's scatter and sparse paths: many short-lived index and message tensors of varied sizes)."""
import torch
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv
from torch_geometric.utils import to_undirected

from common import report, torch_figures


class GCN(torch.nn.Module):
    def __init__(self, dim_in, hidden, classes):
        super().__init__()
        self.conv1 = GCNConv(dim_in, hidden)
        self.conv2 = GCNConv(hidden, classes)

    def forward(self, x, edge_index):
        x = torch.relu(self.conv1(x, edge_index))
        x = torch.nn.functional.dropout(x, p=0.5, training=self.training)
        return self.conv2(x, edge_index)


if __name__ == "__main__":
    torch.manual_seed(0)
    nodes, edges = 50_000, 500_000
    edge_index = to_undirected(torch.randint(0, nodes, (2, edges)))
    data = Data(x=torch.randn(nodes, 128), edge_index=edge_index,
                y=torch.randint(0, 16, (nodes,))).to("cuda")
    model = GCN(128, 256, 16).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for epoch in range(30):
        model.train()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(data.x, data.edge_index), data.y)
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        acc = float((model(data.x, data.edge_index).argmax(1) == data.y).float().mean())
    report("pyg_gcn", loss=float(loss), acc=acc, **torch_figures(torch))
