"""Where frames come from: video files, image sequences, URLs and cameras (OpenCV, PyAV), NVDEC
on the GPU, and the threads that read ahead."""
