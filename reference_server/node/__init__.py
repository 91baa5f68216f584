"""One model replica ("GPU node") as its own process: a dynamic batcher in front of an ONNX model."""
