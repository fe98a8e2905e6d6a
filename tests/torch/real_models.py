"""Real torchvision classifiers for tests/torch/test_models.py (suite 'torch', test
'torch-models').

Each entry is a factory in this file, so its MODULE_SPEC is "tests/torch/real_models.py:NAME"
(imported by optimus_fx.py under the module name optimus_user_real_models). Every factory
builds its model with weights=None (nothing is downloaded); optimus_fx.py puts it in eval()
mode. Inputs are the smallest each architecture accepts (1x3x32x32; inception_v3 needs
75x75). vit_b_16 needs 224x224 at its full size, so a smaller instance of the same class
(torchvision.models.vision_transformer.VisionTransformer) is built instead; the others are the
torchvision builders' full architectures.
"""

import collections

import torchvision.models as tvm
from torchvision.models.vision_transformer import VisionTransformer

Model = collections.namedtuple("Model", "name family shape note")


def resnet18():
    return tvm.resnet18(weights=None)


def googlenet():
    # the auxiliary classifiers only run in training mode; init_weights=False skips the
    # (slow) truncated-normal init the sin fill overwrites anyway
    return tvm.googlenet(weights=None, aux_logits=False, init_weights=False)


def inception_v3():
    return tvm.inception_v3(weights=None, aux_logits=False, init_weights=False)


def densenet121():
    return tvm.densenet121(weights=None)


def shufflenet_v2_x0_5():
    return tvm.shufflenet_v2_x0_5(weights=None)


def mobilenet_v3_small():
    return tvm.mobilenet_v3_small(weights=None)


def efficientnet_b0():
    return tvm.efficientnet_b0(weights=None)


def convnext_tiny():
    return tvm.convnext_tiny(weights=None)


def vit_b_16_small():
    return VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=2,
                             hidden_dim=64, mlp_dim=128)


def swin_t():
    return tvm.swin_t(weights=None)


def swin_v2_t():
    return tvm.swin_v2_t(weights=None)


def mobilenet_v2():
    return tvm.mobilenet_v2(weights=None)


def lraspp_mobilenet_v3_large():
    from torchvision.models.segmentation import lraspp_mobilenet_v3_large as build
    return build(weights=None, weights_backbone=None)


def regnet_y_400mf():
    return tvm.regnet_y_400mf(weights=None)


def resnext50_32x4d():
    return tvm.resnext50_32x4d(weights=None)


def squeezenet1_1():
    return tvm.squeezenet1_1(weights=None)


S32 = (1, 3, 32, 32)

MODELS = [
    Model("resnet18", "residual", S32, ""),
    Model("googlenet", "inception", S32, "aux_logits=False"),
    Model("inception_v3", "inception", (1, 3, 75, 75), "aux_logits=False"),
    Model("densenet121", "dense", S32, ""),
    Model("shufflenet_v2_x0_5", "channel shuffle", S32, ""),
    Model("mobilenet_v3_small", "depthwise, hardswish", S32, ""),
    Model("efficientnet_b0", "squeeze-excite, stochastic depth", S32, ""),
    Model("convnext_tiny", "convnext, stochastic depth", S32, ""),
    Model("vit_b_16_small", "transformer", S32,
          "smaller VisionTransformer: image 32, patch 16, 2 layers, 2 heads, hidden 64, mlp 128"),
    Model("swin_t", "windowed attention", S32, ""),
    Model("swin_v2_t", "cosine windowed attention", S32, ""),
    Model("mobilenet_v2", "inverted residual, relu6", S32, ""),
    Model("lraspp_mobilenet_v3_large", "segmentation: bilinear resizing, a dict output", S32, ""),
    Model("regnet_y_400mf", "regnet (module paths with '-')", S32, ""),
    Model("resnext50_32x4d", "grouped residual", S32, ""),
    Model("squeezenet1_1", "squeeze (fire)", S32, ""),
]

# Models that torch 1.13's torch.fx.symbolic_trace cannot trace, with the reason: reported as
# "ok ... # SKIP" (never a pass). None so far: every model above traces.
UNTRACEABLE = {}
