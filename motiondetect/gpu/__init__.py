"""The GPU layer: the CUDA context and buffers, kernel sources, cuBLAS, and the backend choice.
Importing it never touches CUDA; PyCUDA is imported when a handler is entered."""
