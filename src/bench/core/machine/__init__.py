"""The machine a measurement ran on: devices and thread counts (``devices``: CPU and GPU as the process
sees them, the storage under a path), the hardware named the way a reader needs it (``hardware``: CPU
model, sockets, block devices) and the control groups that cap a step's memory and I/O (``cgroups``)."""
