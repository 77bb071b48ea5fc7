"""Layers shaped like torch.nn: build them once, call them inside a tw.Graph's build()."""
from .module import Module, Parameter, Sequential, ModuleList
from .layers import (Linear, Embedding, LayerNorm, RMSNorm, RotaryEmbedding, ReLU, GELU, SiLU,
                     Dropout)
from .loss import CrossEntropyLoss
from . import functional

__all__ = ["Module", "Parameter", "Sequential", "ModuleList", "Linear", "Embedding", "LayerNorm",
           "RMSNorm", "RotaryEmbedding", "ReLU", "GELU", "SiLU", "Dropout", "CrossEntropyLoss", "functional"]
