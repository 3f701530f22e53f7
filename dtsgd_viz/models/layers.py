"""tf-keras layers that keep their weights sharded under DTensor (tf 2.21).

Each works around one DTensor limitation, named in its docstring. They behave like
the tf-keras layer they extend; off a mesh (plain variables) they are that layer.

Two more recipes need no layer of their own (``dtsgd_viz.models`` follows both):

- ``LayerNormalization(epsilon=1e-6)``: tf-keras uses a fused batch-norm kernel when
  ``epsilon >= 1.001e-5``, and DTensor has no layout propagation for
  ``FusedBatchNormV3``. Below that epsilon it computes the moments itself.
- ``MultiHeadAttention`` (and any layer with dropout) on a mesh: call
  ``tf_keras.backend.experimental.enable_tf_random_generator()`` before building the
  model, so its random state is a ``tf.random.Generator`` that the ``LayoutMap`` can
  place on the mesh.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
import tf_keras
from tensorflow.experimental import dtensor

__all__ = ["ShardedConv2D", "TableEmbedding"]


def _replicated(value, variable):
    """``value`` (read from ``variable``) relaid out to replicated on the variable's mesh;
    unchanged when ``variable`` is not a DTensor variable."""
    layout = getattr(variable, "layout", None)
    value = tf.convert_to_tensor(value)
    if layout is None:
        return value
    # the stub declares Layout as Incomplete, without its classmethods
    replicated = dtensor.Layout.replicated(layout.mesh, layout.rank)  # pyright: ignore[reportAttributeAccessIssue]
    return dtensor.relayout(value, replicated)


class ShardedConv2D(tf_keras.layers.Conv2D):
    """A ``Conv2D`` whose kernel and bias may be sharded (e.g. by filter, over ``model``).

    DTensor refuses a sharded filter ("Filter for convolution must have fully replicated
    layout"), and a bias sharded over ``model`` makes it expect the convolution's output
    sharded the same way, which its SPMD expansion then fails to produce ("SPMD expansion
    resulted in op output inconsistent with the provided layout"). This layer keeps both
    variables in their ``LayoutMap`` layout (so the optimizer's update and its velocity
    stay sharded, one block per device) and relays their values out to replicated just
    before the convolution and the bias add. The gradients come back in the variables'
    own layouts.

    >>> import dtsgd_viz
    >>> mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    >>> layout_map = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
    >>> layout_map["conv.kernel"] = dtensor.Layout(["unsharded"] * 3 + ["model"], mesh)
    >>> layout_map["conv.bias"] = dtensor.Layout(["model"], mesh)
    >>> with layout_map.scope():
    ...     model = tf_keras.Sequential([ShardedConv2D(8, 3, name="conv", input_shape=(5, 5, 1))])
    >>> model.layers[0].kernel.layout.sharding_specs     # 2 filters on each model device
    ['unsharded', 'unsharded', 'unsharded', 'model']
    >>> images = dtensor.call_with_layout(
    ...     tf.ones, dtensor.Layout(["batch", "unsharded", "unsharded", "unsharded"], mesh),
    ...     shape=(4, 5, 5, 1))
    >>> tuple(model(images).shape)
    (4, 3, 3, 8)
    """

    def __init__(self, filters: int, kernel_size: int | tuple[int, int], *args: Any, **kwargs: Any):
        super().__init__(filters, kernel_size, *args, **kwargs)
        if self.groups != 1:
            raise ValueError(
                f"ShardedConv2D supports groups=1 only (grouped convolutions "
                f"go through XLA, outside DTensor). Received: groups={self.groups}."
            )

    def convolution_op(self, inputs: Any, kernel: Any) -> Any:
        return super().convolution_op(inputs, _replicated(kernel, self.kernel))

    def call(self, inputs: Any) -> Any:
        if not self.use_bias:
            return super().call(inputs)
        outputs = self.convolution_op(inputs, self.kernel)
        outputs = tf.nn.bias_add(
            outputs,
            _replicated(self.bias, self.bias),
            # tf_keras sets it to "NHWC" or "NCHW"; the stub wants a Literal
            data_format=self._tf_data_format,  # pyright: ignore[reportArgumentType]
        )
        if not tf.executing_eagerly() and inputs.shape.rank:
            outputs.set_shape(self.compute_output_shape(inputs.shape))
        return outputs if self.activation is None else self.activation(outputs)


class TableEmbedding(tf_keras.layers.Embedding):
    """An ``Embedding`` whose table may be sharded by rows (the vocabulary, over ``model``).

    tf-keras looks rows up with ``ResourceGather`` on the variable, which DTensor rejects
    for a table sharded by rows ("unshard dimension 0"); a ``tf.gather`` from the table
    read as a tensor works for any layout. The gradient is still sparse
    (``tf.IndexedSlices``): ``dtsgd_viz.SGD`` densifies it on a mesh, once warning of
    the cost.

    >>> import dtsgd_viz
    >>> mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    >>> layout_map = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
    >>> layout_map["emb.embeddings"] = dtensor.Layout(["model", "unsharded"], mesh)
    >>> with layout_map.scope():
    ...     model = tf_keras.Sequential([TableEmbedding(16, 3, name="emb", input_length=2)])
    >>> ids = dtensor.copy_to_mesh(tf.constant([[1, 2], [3, 15]]),
    ...                            dtensor.Layout.replicated(mesh, 2))
    >>> tuple(model(ids).shape)              # rows 0-3 on the first model device, ...
    (2, 2, 3)
    """

    def call(self, inputs: Any) -> Any:
        return tf.gather(tf.convert_to_tensor(self.embeddings), tf.cast(inputs, tf.int32))
