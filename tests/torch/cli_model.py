"""A user model file for the optimus_fx.py CLI tests (MODULE_SPEC cli_model.py:Net)."""

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 6)
        self.emb = nn.Embedding(10, 6)

    def forward(self, x, ids):
        return torch.tanh(self.fc(x)) + self.emb(ids)
