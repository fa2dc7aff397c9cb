"""Quantized models as users make them with PyTorch (issue 15), shared by the oracle fixtures
(tests/api/gen_quantized.py) and the benchmark (bench/quant_bench.py).

- static_quantize: eager static quantization (optional fuse, prepare, calibrate, convert) with
  PyTorch's default qconfig of a backend ("fbgemm": per-channel weights and reduce_range;
  "qnnpack": per-tensor weights, full quint8 range).
- fx_quantize: FX graph mode static quantization (prepare_fx / convert_fx) with the backend's
  default qconfig mapping.
- torchvision_quantized / torchvision_fx_quantized: one of torchvision's networks (random
  weights, seeded): the quantizable variant fused with its own fuse_model() and eager-static
  quantized, or the float one through FX.

PyTorch's quantized engine stays what it is (onednn on Debian's 1.13 build, which has no
fbgemm): the qconfig decides the observers, the engine only how PyTorch computes.
"""
import torch
import torch.ao.quantization as tq

# name -> (constructor in torchvision.models.quantization, keyword arguments). aux_logits off:
# in eval mode PyTorch drops the auxiliary heads anyway, and scripted they change the output type.
TORCHVISION = {
    "resnet18": ("resnet18", {}),
    "mobilenet_v2": ("mobilenet_v2", {}),
    "mobilenet_v3_large": ("mobilenet_v3_large", {}),
    "shufflenet_v2_x0_5": ("shufflenet_v2_x0_5", {}),
    "googlenet": ("googlenet", {"aux_logits": False, "init_weights": False}),
    "inception_v3": ("inception_v3", {"aux_logits": False, "init_weights": False}),
}


def static_quantize(model, calib, fuse=None, backend="fbgemm", qconfig=None):
    """Eager static quantization in place: model.qconfig (the backend's default unless given),
    fuse_modules(fuse), prepare, one forward per calibration input (a tensor or a tuple of
    tensors; calib may be a generator, drawn after prepare), convert. Returns the model."""
    model.eval()
    model.qconfig = qconfig if qconfig is not None else tq.get_default_qconfig(backend)
    if fuse:
        tq.fuse_modules(model, fuse, inplace=True)
    tq.prepare(model, inplace=True)
    with torch.no_grad():
        for c in calib:
            model(*c) if isinstance(c, tuple) else model(c)
    tq.convert(model, inplace=True)
    return model


def fx_quantize(model, example, calib, backend="fbgemm"):
    """FX graph mode static quantization of a float model (eval): prepare_fx with the backend's
    default qconfig mapping and `example` (a tuple of inputs), one forward per calibration input
    (a tensor or a tuple; calib may be a generator, drawn after the model is made), convert_fx."""
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    prepared = prepare_fx(model.eval(), tq.get_default_qconfig_mapping(backend), example)
    with torch.no_grad():
        for c in calib:
            prepared(*c) if isinstance(c, tuple) else prepared(c)
    return convert_fx(prepared)


def torchvision_model(name, size, quantizable=True, seed=0):
    """torchvision's `name` (a TORCHVISION key) with random weights after torch.manual_seed(seed),
    in eval mode: the quantizable variant (torchvision.models.quantization, quantize=False), or
    the float model for FX. Its batch norms' running statistics are those of three random
    [2, 3, size, size] batches (train-mode forwards, cumulative averages): with the initial ones
    (mean 0, var 1) mobilenet_v2 / v3's activations vanish and every logit is 0."""
    import torchvision

    ctor, kw = TORCHVISION[name]
    torch.manual_seed(seed)
    if quantizable:
        m = getattr(torchvision.models.quantization, ctor)(weights=None, quantize=False, **kw)
    else:
        m = getattr(torchvision.models, ctor)(weights=None, **kw)
    for mod in m.modules():
        if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm):
            mod.reset_running_stats()
            mod.momentum = None
    m.train()
    with torch.no_grad():
        for _ in range(3):
            m(torch.randn(2, 3, size, size))
    return m.eval()


def torchvision_quantized(name, size, batches=3, backend="fbgemm", seed=0):
    """torchvision's quantizable `name` (torchvision_model), fuse_model(), then eager static
    quantization calibrated on `batches` random [2, 3, size, size] inputs drawn after the model.
    Returns the converted eager module."""
    m = torchvision_model(name, size, True, seed)
    m.fuse_model()
    return static_quantize(m, (torch.randn(2, 3, size, size) for _ in range(batches)), backend=backend)


def torchvision_fx_quantized(name, size, batches=3, backend="fbgemm", seed=0):
    """torchvision's float `name` through fx_quantize, example and calibration inputs random
    [2, 3, size, size] drawn after the model. Returns the converted GraphModule (trace it)."""
    m = torchvision_model(name, size, False, seed)
    return fx_quantize(m, (torch.randn(2, 3, size, size),),
                       (torch.randn(2, 3, size, size) for _ in range(batches)), backend)
