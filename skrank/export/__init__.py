"""Models that leave Python: ONNX graphs and the formats search engines load.

Nothing here is imported by ``import skrank``; the ONNX functions import the
optional packages onnx and skl2onnx (the ``onnx`` extra) when called.
"""

from ._onnx import register_onnx_converters, to_onnx

__all__ = ["register_onnx_converters", "to_onnx"]
