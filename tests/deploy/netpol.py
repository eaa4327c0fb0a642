"""A tiny evaluator of NetworkPolicies: does a connection from one endpoint to another get through?

It follows the API's rules (networking.k8s.io/v1): a pod that no policy of a direction selects is open in that
direction; once one selects it, only what some rule of those policies admits gets through; a connection needs the
source's egress and the destination's ingress. Peers: podSelector (the policy's namespace), namespaceSelector
(with or without a podSelector), ipBlock (with except), matched against pods and plain addresses; ipBlocks are
matched against addresses only (which pod addresses an ipBlock covers is left to the network plugin). Ports: by
number, by the destination container's port name, with endPort and protocol (TCP when absent).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Pod:
    name: str
    namespace: str
    labels: dict = field(hash=False, compare=False)
    # (name, number, protocol) of every container port.
    ports: tuple[tuple[str, int, str], ...] = ()


@dataclass(frozen=True)
class Address:
    name: str
    ip: str
    ports: tuple[tuple[str, int, str], ...] = ()


Endpoint = Pod | Address


def selects(selector: dict | None, labels: dict) -> bool:
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


class Cluster:
    def __init__(self, policies: list[dict], namespace_labels: dict[str, dict] | None = None) -> None:
        self.policies = [p for p in policies if p["kind"] == "NetworkPolicy"]
        self.namespace_labels = namespace_labels or {}

    def _namespace_labels(self, namespace: str) -> dict:
        return {**self.namespace_labels.get(namespace, {}), "kubernetes.io/metadata.name": namespace}

    def _policies(self, pod: Pod, direction: str) -> list[dict]:
        found = []
        for policy in self.policies:
            spec = policy["spec"]
            types = spec.get("policyTypes") or (["Ingress", "Egress"] if "egress" in spec else ["Ingress"])
            if (
                policy["metadata"].get("namespace") == pod.namespace
                and direction in types
                and selects(spec.get("podSelector"), pod.labels)
            ):
                found.append(policy)
        return found

    def _peer(self, peer: dict, other: Endpoint, namespace: str) -> bool:
        if "ipBlock" in peer:
            if not isinstance(other, Address):
                return False
            ip = ipaddress.ip_address(other.ip)
            block = peer["ipBlock"]
            network = ipaddress.ip_network(block["cidr"])
            if ip.version != network.version or ip not in network:
                return False
            return not any(
                ip.version == ipaddress.ip_network(e).version and ip in ipaddress.ip_network(e)
                for e in block.get("except") or []
            )
        if not isinstance(other, Pod):
            return False
        if "namespaceSelector" in peer:
            if not selects(peer["namespaceSelector"], self._namespace_labels(other.namespace)):
                return False
        elif other.namespace != namespace:
            return False
        return selects(peer.get("podSelector"), other.labels) if "podSelector" in peer else True

    @staticmethod
    def _port(entries: list | None, port: int, protocol: str, destination: Endpoint) -> bool:
        if not entries:
            return True
        for entry in entries:
            if entry.get("protocol", "TCP") != protocol:
                continue
            wanted = entry.get("port")
            if wanted is None:
                return True
            if isinstance(wanted, str):
                if any(n == wanted and num == port and p == protocol for n, num, p in destination.ports):
                    return True
                continue
            if wanted == port or (entry.get("endPort") and wanted <= port <= entry["endPort"]):
                return True
        return False

    def allowed(self, source: Endpoint, destination: Endpoint, port: int, protocol: str = "TCP") -> bool:
        if isinstance(source, Pod):
            policies = self._policies(source, "Egress")
            if policies and not any(
                self._port(rule.get("ports"), port, protocol, destination)
                and (not rule.get("to") or any(self._peer(peer, destination, source.namespace) for peer in rule["to"]))
                for policy in policies
                for rule in policy["spec"].get("egress") or []
            ):
                return False
        if isinstance(destination, Pod):
            policies = self._policies(destination, "Ingress")
            if policies and not any(
                self._port(rule.get("ports"), port, protocol, destination)
                and (
                    not rule.get("from")
                    or any(self._peer(peer, source, destination.namespace) for peer in rule["from"])
                )
                for policy in policies
                for rule in policy["spec"].get("ingress") or []
            ):
                return False
        return True
