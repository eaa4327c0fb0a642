"""Reading the GPUs of this node through NVML, for the gpu_agent command.

nvidia-ml-py (`import pynvml`) is imported only here and only when called, so the portal runs on
machines without an NVIDIA driver. A reading NVML does not support on a GPU is left out (None).
Xid errors arrive as NVML events; the reader keeps the last code per GPU, as dcgm-exporter does.
"""

from __future__ import annotations

import logging
import time
from typing import Any

log = logging.getLogger("labs.telemetry")


class NvmlReader:
    def __init__(self, nvml: Any = None) -> None:
        if nvml is None:
            import pynvml as nvml  # nvidia-ml-py

        self.nvml = nvml
        self.nvml.nvmlInit()
        self._handles = [self.nvml.nvmlDeviceGetHandleByIndex(index) for index in range(self.nvml.nvmlDeviceGetCount())]
        self._xid = [0] * len(self._handles)
        # Events name their device by a handle object that does not compare equal to ours: go by UUID.
        self._index_by_uuid = {self._uuid(handle): index for index, handle in enumerate(self._handles)}
        self._events = self._register_xid_events()

    def _register_xid_events(self):
        nvml = self.nvml
        try:
            events = nvml.nvmlEventSetCreate()
            for handle in self._handles:
                nvml.nvmlDeviceRegisterEvents(handle, nvml.nvmlEventTypeXidCriticalError, events)
            return events
        except Exception as exc:  # NVMLError_NotSupported on some boards: no Xid then
            log.warning("gpu agent: Xid events are not available: %s", exc)
            return None

    def _drain_xid_events(self) -> None:
        if self._events is None:
            return
        for _ in range(100):
            try:
                event = self.nvml.nvmlEventSetWait(self._events, 0)
            except self.nvml.NVMLError:  # NVMLError_Timeout: nothing waiting
                return
            index = self._index_by_uuid.get(self._uuid(event.device))
            if index is not None:
                self._xid[index] = int(event.eventData)
                log.warning("gpu agent: GPU %d reported Xid %d", index, self._xid[index])

    def _uuid(self, handle) -> str | None:
        uuid = self._get(self.nvml.nvmlDeviceGetUUID, handle)
        return uuid.decode() if isinstance(uuid, bytes) else uuid

    def _get(self, call, *args):
        try:
            return call(*args)
        except self.nvml.NVMLError:
            return None

    def read(self) -> list[dict]:
        """One sample per GPU, as the push API takes it."""
        nvml = self.nvml
        self._drain_xid_events()
        now = time.time()
        samples = []
        for index, handle in enumerate(self._handles):
            util = self._get(nvml.nvmlDeviceGetUtilizationRates, handle)
            memory = self._get(nvml.nvmlDeviceGetMemoryInfo, handle)
            power_mw = self._get(nvml.nvmlDeviceGetPowerUsage, handle)
            energy_mj = self._get(nvml.nvmlDeviceGetTotalEnergyConsumption, handle)
            name = self._get(nvml.nvmlDeviceGetName, handle)
            samples.append(
                {
                    "index": index,
                    "uuid": self._uuid(handle),
                    "model": name.decode() if isinstance(name, bytes) else name,
                    "util_pct": float(util.gpu) if util is not None else None,
                    "mem_used_mb": memory.used / 2**20 if memory is not None else None,
                    "mem_total_mb": memory.total / 2**20 if memory is not None else None,
                    "temp_c": self._get(nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU),
                    "power_w": power_mw / 1000.0 if power_mw is not None else None,
                    "energy_j": energy_mj / 1000.0 if energy_mj is not None else None,
                    "xid": self._xid[index],
                    "sampled_at": now,
                }
            )
        return samples

    def close(self) -> None:
        try:
            if self._events is not None:
                self.nvml.nvmlEventSetFree(self._events)
            self.nvml.nvmlShutdown()
        except Exception:
            log.debug("gpu agent: NVML shutdown failed", exc_info=True)
