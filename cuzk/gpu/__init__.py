"""GPU side: kernel loading (NVRTC through cupy.RawModule) and host wrappers per phase.
Nothing here imports CuPy or compiles at import time."""
