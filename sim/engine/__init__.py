"""The timing engine: a call's tile pipeline on the shared timeline, the transfer (DMA) and
compute (vector) models, link sharing, tiling, the roofline, and the detailed reference."""
