"""Mixed-precision numerics the keras-hub layers leave in the compute dtype.

Under "mixed_bfloat16" (or "mixed_float16") Keras' MultiHeadAttention runs
its softmax in the compute dtype: the row max, the exponentials' sum and the
normalization in bfloat16 (8 bits of mantissa), so attention rows over 128+
keys sum to 1 only within a few percent. The original keeps softmax
statistics in float32 (as Keras' LayerNormalization does already), so each
attention layer's softmax here computes in float32 and returns its
probabilities in the compute dtype (the value matmul stays in bfloat16).
Under "float32" nothing changes.
"""

import keras


@keras.saving.register_keras_serializable(package="bert_tf")
class Float32Softmax(keras.layers.Softmax):
  """keras.layers.Softmax with float32 statistics: input cast to float32,
  output cast back to the layer's compute dtype."""

  def call(self, inputs, mask=None):
    return keras.ops.cast(super().call(keras.ops.cast(inputs, "float32"), mask=mask),
                          self.compute_dtype)


def float32_attention_softmax(layers):
  """Gives each keras-hub TransformerEncoder in `layers` a float32-statistics
  attention softmax (in place; a layer's weights are untouched)."""
  for layer in layers:
    attention = layer._self_attention_layer  # pylint: disable=protected-access
    softmax = attention._softmax  # pylint: disable=protected-access
    if isinstance(softmax, Float32Softmax):
      continue
    # A built Keras layer refuses new sub-layers; this one has no state, so
    # it takes the old one's place in the layer's tracking.
    tracker = attention._tracker  # pylint: disable=protected-access
    tracker.unlock()
    tracker.untrack(softmax)
    attention._softmax = Float32Softmax(  # pylint: disable=protected-access
        axis=softmax.axis, dtype=attention.dtype_policy, name=softmax.name)
    tracker.lock()
