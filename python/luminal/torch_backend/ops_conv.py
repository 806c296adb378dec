"""The convolution converter: aten.convolution (conv1d, conv2d, conv3d; groups of any count)
whose windows do not overlap (no padding or dilation, kernel <= stride: a ViT's patch embedding,
a 1x1 convolution) as windows and one batched matmul, the im2col form, each input element read
once. Overlapping windows (a CNN's 3x3, Whisper's conv1d) stay in eager: the unfolded form copies
each element once per window and measured 1.6-4x eager's oneDNN kernels (2026-12-05).
"""

import math

import torch

from .table import _cast, _lt, _mul_size, op

aten = torch.ops.aten


def _check_conv(node):
    a = list(node.args) + [None] * (9 - len(node.args))
    transposed, groups = a[6], a[8]
    if transposed:
        return "a transposed convolution"
    w = node.args[1].meta.get("val") if isinstance(node.args[1], torch.fx.Node) else None
    if not isinstance(w, torch.Tensor) or w.dim() not in (3, 4, 5):
        return "a convolution other than 1, 2 or 3 spatial axes"
    if any(not isinstance(d, int) for d in w.shape):
        return "a convolution with a dynamic kernel"
    if not isinstance(groups, int) or groups < 1:
        return "a convolution with a dynamic group count"
    stride, padding, dilation = a[3], a[4], a[5]
    if any(padding) or any(d != 1 for d in dilation) or any(
        k > s for k, s in zip(w.shape[2:], stride)
    ):
        # The unfolded form copies each input element once per window that reads it, then
        # multiplies: measured 1.6-4x eager's (oneDNN) on a ResNet block and Whisper's convs.
        return (
            "a convolution with padding, dilation or overlapping windows "
            "(eager's kernels are faster)"
        )
    return None


def _prod(sizes):
    out = 1
    for s in sizes:
        out = _mul_size(out, s)
    return out


@op(aten.convolution.default, check=_check_conv)
def _conv(cx, node, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    """out[b, o, p...] = sum over c, k... of x[b, c, p * stride + k] * w[o, c, k...] (+ bias[o]),
    for the channels of o's group (the check leaves only windows that do not overlap: no padding
    or dilation, kernel <= stride). Each spatial axis is unfolded into windows, then channels and
    windows meet in one matmul a group."""
    n = w.ndim - 2
    dt = _lt(cx.dtype(node))
    x = _cast(x, dt)
    w = _cast(w, dt)
    kernel = list(w.shape[2:])
    for i in range(n):
        x = x.unfold(2 + i, kernel[i], stride[i])
    # x: [B, C, O..., K...] -> [B, G, O..., C/G, K...] -> [B, G, P, C/G * K] (the columns).
    out_shape = cx.shape(node)
    batch, cout, spatial = out_shape[0], out_shape[1], list(out_shape[2:])
    cin, g = x.shape[1], groups
    ck = (cin // g) * math.prod(kernel)
    cols = x.reshape([batch, g, cin // g] + spatial + kernel)
    o_axes, k_axes = list(range(3, 3 + n)), list(range(3 + n, 3 + 2 * n))
    cols = cols.permute([0, 1] + o_axes + [2] + k_axes)
    cols = cols.reshape([batch, g, _prod(spatial), ck])
    wm = w.reshape([g, cout // g, ck]).transpose(1, 2)  # [G, C/G * K, Cout/G]
    out = cols.matmul(wm.unsqueeze(0))  # [B, G, P, Cout/G]
    out = out.permute([0, 1, 3, 2]).reshape([batch, cout] + spatial)
    if bias is not None:
        out = out + _cast(bias, dt).reshape([cout] + [1] * n)
    return out
