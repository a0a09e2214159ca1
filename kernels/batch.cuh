// Batches of images: a 2-D image kernel launched with gridDim.z = K runs on K images stored one
// after another in each buffer; blockIdx.z picks the image, and each buffer moves by the size of
// one of its images. With gridDim.z = 1 (a single image) nothing moves, so one kernel serves
// single frames and batches, and a batch computes exactly what K single launches would.
#pragma once
#define MD_IMAGE(ptr, plane) ((ptr) += (size_t)blockIdx.z * (size_t)(plane))
