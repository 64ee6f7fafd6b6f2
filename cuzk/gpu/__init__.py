"""GPU side: kernel loading (NVRTC through cupy.RawModule) and the host side of each kernel.

The device modules import CuPy at their top and are imported where a GPU run starts (the cuda backend, `cuzk
micro`, the GPU tools); what they plan with on the host (kernel_sources, cub_library, ntt_plan, and msm's plan,
options, fold, parts and tables) imports nothing of CuPy and serves the CPU path and its tests. Some still import
CuPy inside functions: gpu/keygen.py, and loader, per_device, fr, ntt, spmv and srs, which gpu/keygen.py imports at
its top while cuzk/keygen.py imports it on the CPU path (tests/project/test_cupy_imports.py lists them). Nothing
compiles at import time."""
