"""The embedding runtime: the models behind a registry (ONNX copy, else PyTorch), the warm
local embedding server shared by ``wiki`` processes and its client, and query vectors."""
