#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A small client of the Kubernetes Container Runtime Interface (CRI), for
tests/engines/cri.bats: it makes the RuntimeService calls the kubelet makes,
on a containerd socket, with JSON in and out.

There is no generated code: the few CRI messages it uses are described here,
with the names and field numbers of the CRI specification (package
runtime.v1), and protobuf builds their classes at run time. Only the fields
the tests use are described; protobuf keeps any other field a reply carries
as unknown and the JSON output leaves it out.

Usage: cri.py --sock SOCKET COMMAND ARGS...

    version                         VersionResponse
    image-status IMAGE              ImageStatusResponse (ImageService)
    runtime-status                  StatusResponse (verbose: its info too)
    run-pod POD.json [--handler H]  the new pod's id; POD.json is a
                                    PodSandboxConfig
    pod-status POD [--verbose]      PodSandboxStatusResponse
    stop-pod POD, remove-pod POD
    create POD CONTAINER.json POD.json
                                    the new container's id; CONTAINER.json
                                    is a ContainerConfig
    start ID, remove ID, stop ID [--timeout S]
    status ID [--verbose]           ContainerStatusResponse
    list [--pod POD] [--state S]    ListContainersResponse
    exec-sync ID [--timeout S] -- CMD...
                                    the command's stdout and stderr on ours,
                                    its exit code as ours
    update ID RESOURCES.json        UpdateContainerResources; RESOURCES.json
                                    is a LinuxContainerResources

The JSON is protobuf's JSON mapping with the specification's field names
(`log_directory`, not `logDirectory`); enums are their names, 64-bit
integers strings. A failed call prints "cri.py: METHOD: CODE: DETAILS" on
stderr and exits 125.
"""

import argparse
import json
import sys

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

PACKAGE = "runtime.v1"
RPC_FAILED = 125

# field: (name, number, type); type is a scalar's name, "map" (string to
# string), "enum:NAME" or a message's name, with "repeated " before it for a
# list
ENUMS = {
    "PodSandboxState": ["SANDBOX_READY", "SANDBOX_NOTREADY"],
    "NamespaceMode": ["POD", "CONTAINER", "NODE", "TARGET"],
    "ContainerState": ["CONTAINER_CREATED", "CONTAINER_RUNNING", "CONTAINER_EXITED", "CONTAINER_UNKNOWN"],
}

MESSAGES = {
    "VersionRequest": [("version", 1, "string")],
    "VersionResponse": [
        ("version", 1, "string"),
        ("runtime_name", 2, "string"),
        ("runtime_version", 3, "string"),
        ("runtime_api_version", 4, "string"),
    ],
    "StatusRequest": [("verbose", 1, "bool")],
    "RuntimeCondition": [
        ("type", 1, "string"),
        ("status", 2, "bool"),
        ("reason", 3, "string"),
        ("message", 4, "string"),
    ],
    "RuntimeStatus": [("conditions", 1, "repeated RuntimeCondition")],
    "StatusResponse": [("status", 1, "RuntimeStatus"), ("info", 2, "map")],
    "PodSandboxMetadata": [
        ("name", 1, "string"),
        ("uid", 2, "string"),
        ("namespace", 3, "string"),
        ("attempt", 4, "uint32"),
    ],
    "NamespaceOption": [
        ("network", 1, "enum:NamespaceMode"),
        ("pid", 2, "enum:NamespaceMode"),
        ("ipc", 3, "enum:NamespaceMode"),
        ("target_id", 4, "string"),
    ],
    "LinuxSandboxSecurityContext": [("namespace_options", 1, "NamespaceOption")],
    "LinuxPodSandboxConfig": [("cgroup_parent", 1, "string"), ("security_context", 2, "LinuxSandboxSecurityContext")],
    "PodSandboxConfig": [
        ("metadata", 1, "PodSandboxMetadata"),
        ("hostname", 2, "string"),
        ("log_directory", 3, "string"),
        ("labels", 6, "map"),
        ("annotations", 7, "map"),
        ("linux", 8, "LinuxPodSandboxConfig"),
    ],
    "RunPodSandboxRequest": [("config", 1, "PodSandboxConfig"), ("runtime_handler", 2, "string")],
    "RunPodSandboxResponse": [("pod_sandbox_id", 1, "string")],
    "StopPodSandboxRequest": [("pod_sandbox_id", 1, "string")],
    "StopPodSandboxResponse": [],
    "RemovePodSandboxRequest": [("pod_sandbox_id", 1, "string")],
    "RemovePodSandboxResponse": [],
    "PodSandboxStatusRequest": [("pod_sandbox_id", 1, "string"), ("verbose", 2, "bool")],
    "PodIP": [("ip", 1, "string")],
    "PodSandboxNetworkStatus": [("ip", 1, "string"), ("additional_ips", 2, "repeated PodIP")],
    "PodSandboxStatus": [
        ("id", 1, "string"),
        ("metadata", 2, "PodSandboxMetadata"),
        ("state", 3, "enum:PodSandboxState"),
        ("created_at", 4, "int64"),
        ("network", 5, "PodSandboxNetworkStatus"),
        ("labels", 7, "map"),
        ("annotations", 8, "map"),
        ("runtime_handler", 9, "string"),
    ],
    "PodSandboxStatusResponse": [("status", 1, "PodSandboxStatus"), ("info", 2, "map")],
    "ImageSpec": [("image", 1, "string")],
    "KeyValue": [("key", 1, "string"), ("value", 2, "string")],
    "ContainerMetadata": [("name", 1, "string"), ("attempt", 2, "uint32")],
    "LinuxContainerSecurityContext": [("namespace_options", 3, "NamespaceOption")],
    "LinuxContainerConfig": [("security_context", 2, "LinuxContainerSecurityContext")],
    "ContainerConfig": [
        ("metadata", 1, "ContainerMetadata"),
        ("image", 2, "ImageSpec"),
        ("command", 3, "repeated string"),
        ("args", 4, "repeated string"),
        ("working_dir", 5, "string"),
        ("envs", 6, "repeated KeyValue"),
        ("labels", 9, "map"),
        ("annotations", 10, "map"),
        ("log_path", 11, "string"),
        ("linux", 15, "LinuxContainerConfig"),
    ],
    "CreateContainerRequest": [
        ("pod_sandbox_id", 1, "string"),
        ("config", 2, "ContainerConfig"),
        ("sandbox_config", 3, "PodSandboxConfig"),
    ],
    "CreateContainerResponse": [("container_id", 1, "string")],
    "StartContainerRequest": [("container_id", 1, "string")],
    "StartContainerResponse": [],
    "StopContainerRequest": [("container_id", 1, "string"), ("timeout", 2, "int64")],
    "StopContainerResponse": [],
    "RemoveContainerRequest": [("container_id", 1, "string")],
    "RemoveContainerResponse": [],
    "ContainerStateValue": [("state", 1, "enum:ContainerState")],
    "ContainerFilter": [
        ("id", 1, "string"),
        ("state", 2, "ContainerStateValue"),
        ("pod_sandbox_id", 3, "string"),
    ],
    "ListContainersRequest": [("filter", 1, "ContainerFilter")],
    "Container": [
        ("id", 1, "string"),
        ("pod_sandbox_id", 2, "string"),
        ("metadata", 3, "ContainerMetadata"),
        ("image", 4, "ImageSpec"),
        ("image_ref", 5, "string"),
        ("state", 6, "enum:ContainerState"),
        ("created_at", 7, "int64"),
        ("labels", 8, "map"),
        ("annotations", 9, "map"),
    ],
    "ListContainersResponse": [("containers", 1, "repeated Container")],
    "ContainerStatusRequest": [("container_id", 1, "string"), ("verbose", 2, "bool")],
    "ContainerStatus": [
        ("id", 1, "string"),
        ("metadata", 2, "ContainerMetadata"),
        ("state", 3, "enum:ContainerState"),
        ("created_at", 4, "int64"),
        ("started_at", 5, "int64"),
        ("finished_at", 6, "int64"),
        ("exit_code", 7, "int32"),
        ("image", 8, "ImageSpec"),
        ("image_ref", 9, "string"),
        ("reason", 10, "string"),
        ("message", 11, "string"),
        ("labels", 12, "map"),
        ("annotations", 13, "map"),
        ("log_path", 15, "string"),
    ],
    "ContainerStatusResponse": [("status", 1, "ContainerStatus"), ("info", 2, "map")],
    "ExecSyncRequest": [("container_id", 1, "string"), ("cmd", 2, "repeated string"), ("timeout", 3, "int64")],
    "ExecSyncResponse": [("stdout", 1, "bytes"), ("stderr", 2, "bytes"), ("exit_code", 3, "int32")],
    "LinuxContainerResources": [
        ("cpu_period", 1, "int64"),
        ("cpu_quota", 2, "int64"),
        ("cpu_shares", 3, "int64"),
        ("memory_limit_in_bytes", 4, "int64"),
    ],
    "UpdateContainerResourcesRequest": [("container_id", 1, "string"), ("linux", 2, "LinuxContainerResources")],
    "UpdateContainerResourcesResponse": [],
    "ImageStatusRequest": [("image", 1, "ImageSpec"), ("verbose", 2, "bool")],
    "Image": [("id", 1, "string"), ("repo_tags", 2, "repeated string"), ("repo_digests", 3, "repeated string")],
    "ImageStatusResponse": [("image", 1, "Image"), ("info", 2, "map")],
}

# the calls of each service: each takes NAME + "Request" and returns NAME +
# "Response"
SERVICES = {
    "RuntimeService": [
        "Version",
        "Status",
        "RunPodSandbox",
        "StopPodSandbox",
        "RemovePodSandbox",
        "PodSandboxStatus",
        "CreateContainer",
        "StartContainer",
        "StopContainer",
        "RemoveContainer",
        "ListContainers",
        "ContainerStatus",
        "ExecSync",
        "UpdateContainerResources",
    ],
    "ImageService": ["ImageStatus"],
}
SERVICE_OF = {method: service for service, methods in SERVICES.items() for method in methods}

FDP = descriptor_pb2.FieldDescriptorProto
SCALARS = {
    "string": FDP.TYPE_STRING,
    "bytes": FDP.TYPE_BYTES,
    "bool": FDP.TYPE_BOOL,
    "int32": FDP.TYPE_INT32,
    "int64": FDP.TYPE_INT64,
    "uint32": FDP.TYPE_UINT32,
}


def _camel(name):
    return "".join(part.capitalize() for part in name.split("_"))


def _add_field(msg, name, number, kind):
    field = msg.field.add(name=name, number=number, label=FDP.LABEL_OPTIONAL)
    if kind.startswith("repeated "):
        field.label = FDP.LABEL_REPEATED
        kind = kind[len("repeated ") :]
    if kind == "map":
        # a map is a repeated message of a nested entry type that says so
        entry = msg.nested_type.add(name=_camel(name) + "Entry")
        entry.options.map_entry = True
        _add_field(entry, "key", 1, "string")
        _add_field(entry, "value", 2, "string")
        field.label = FDP.LABEL_REPEATED
        field.type = FDP.TYPE_MESSAGE
        field.type_name = ".%s.%s.%s" % (PACKAGE, msg.name, entry.name)
    elif kind.startswith("enum:"):
        field.type = FDP.TYPE_ENUM
        field.type_name = ".%s.%s" % (PACKAGE, kind[len("enum:") :])
    elif kind in SCALARS:
        field.type = SCALARS[kind]
    else:
        field.type = FDP.TYPE_MESSAGE
        field.type_name = ".%s.%s" % (PACKAGE, kind)


def _file_descriptor():
    fdp = descriptor_pb2.FileDescriptorProto(name="moat-cri-test.proto", package=PACKAGE, syntax="proto3")
    for name, values in ENUMS.items():
        enum = fdp.enum_type.add(name=name)
        for number, value in enumerate(values):
            enum.value.add(name=value, number=number)
    for name, fields in MESSAGES.items():
        msg = fdp.message_type.add(name=name)
        for field in fields:
            _add_field(msg, *field)
    for name, methods in SERVICES.items():
        service = fdp.service.add(name=name)
        for method in methods:
            service.method.add(
                name=method,
                input_type=".%s.%sRequest" % (PACKAGE, method),
                output_type=".%s.%sResponse" % (PACKAGE, method),
            )
    return fdp


def _message_classes():
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file_descriptor())
    classes = {}
    factory = None
    for name in MESSAGES:
        desc = pool.FindMessageTypeByName("%s.%s" % (PACKAGE, name))
        if hasattr(message_factory, "GetMessageClass"):
            classes[name] = message_factory.GetMessageClass(desc)
        else:
            factory = factory or message_factory.MessageFactory(pool)
            classes[name] = factory.GetPrototype(desc)
    return classes


class RpcFailed(Exception):
    pass


class Client:
    def __init__(self, sock, timeout):
        self.classes = _message_classes()
        self.channel = grpc.insecure_channel("unix://" + sock)
        self.timeout = timeout

    def call(self, method, **fields):
        """METHOD's reply to a request with FIELDS (dicts for messages)."""
        request = json_format.ParseDict(fields, self.classes[method + "Request"]())
        stub = self.channel.unary_unary(
            "/%s.%s/%s" % (PACKAGE, SERVICE_OF[method], method),
            request_serializer=lambda msg: msg.SerializeToString(),
            response_deserializer=self.classes[method + "Response"].FromString,
        )
        try:
            return stub(request, timeout=self.timeout)
        except grpc.RpcError as e:
            raise RpcFailed("%s: %s: %s" % (method, e.code().name, e.details())) from None


def to_json(reply):
    return json.dumps(
        json_format.MessageToDict(reply, preserving_proto_field_name=True, including_default_value_fields=True),
        indent=2,
        sort_keys=True,
    )


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def cmd_exec_sync(client, args):
    reply = client.call("ExecSync", container_id=args.id, cmd=args.cmd, timeout=str(args.timeout))
    sys.stdout.buffer.write(reply.stdout)
    sys.stderr.buffer.write(reply.stderr)
    return reply.exit_code


def cmd_list(client, args):
    filt = {}
    if args.pod:
        filt["pod_sandbox_id"] = args.pod
    if args.state:
        filt["state"] = {"state": "CONTAINER_" + args.state.upper()}
    return to_json(client.call("ListContainers", filter=filt))


def _quiet(reply):
    """An empty reply: nothing to print."""
    del reply


# each command: what it does, given the client and the parsed arguments;
# it returns what to print, or an exit code
COMMANDS = {
    "version": lambda c, a: to_json(c.call("Version", version="v1")),
    "image-status": lambda c, a: to_json(c.call("ImageStatus", image={"image": a.image})),
    "runtime-status": lambda c, a: to_json(c.call("Status", verbose=True)),
    "run-pod": lambda c, a: c.call(
        "RunPodSandbox", config=read_json(a.config), runtime_handler=a.handler
    ).pod_sandbox_id,
    "pod-status": lambda c, a: to_json(c.call("PodSandboxStatus", pod_sandbox_id=a.id, verbose=a.verbose)),
    "stop-pod": lambda c, a: _quiet(c.call("StopPodSandbox", pod_sandbox_id=a.id)),
    "remove-pod": lambda c, a: _quiet(c.call("RemovePodSandbox", pod_sandbox_id=a.id)),
    "create": lambda c, a: c.call(
        "CreateContainer", pod_sandbox_id=a.pod, config=read_json(a.config), sandbox_config=read_json(a.pod_config)
    ).container_id,
    "start": lambda c, a: _quiet(c.call("StartContainer", container_id=a.id)),
    "stop": lambda c, a: _quiet(c.call("StopContainer", container_id=a.id, timeout=str(a.timeout))),
    "remove": lambda c, a: _quiet(c.call("RemoveContainer", container_id=a.id)),
    "status": lambda c, a: to_json(c.call("ContainerStatus", container_id=a.id, verbose=a.verbose)),
    "list": cmd_list,
    "exec-sync": cmd_exec_sync,
    "update": lambda c, a: _quiet(
        c.call("UpdateContainerResources", container_id=a.id, linux=read_json(a.resources))
    ),
}


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="cri.py", description="A small CRI client for moat's tests")
    parser.add_argument("--sock", required=True, help="the CRI socket (containerd's)")
    parser.add_argument("--rpc-timeout", type=float, default=120, help="seconds for each call")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("version")
    sub.add_parser("runtime-status")
    sub.add_parser("image-status").add_argument("image")
    p = sub.add_parser("run-pod")
    p.add_argument("config")
    p.add_argument("--handler", default="")
    for name in ("pod-status", "status"):
        p = sub.add_parser(name)
        p.add_argument("id")
        p.add_argument("--verbose", action="store_true")
    for name in ("stop-pod", "remove-pod", "start", "remove"):
        sub.add_parser(name).add_argument("id")
    p = sub.add_parser("stop")
    p.add_argument("id")
    p.add_argument("--timeout", type=int, default=10)
    p = sub.add_parser("create")
    p.add_argument("pod")
    p.add_argument("config")
    p.add_argument("pod_config")
    p = sub.add_parser("list")
    p.add_argument("--pod")
    p.add_argument("--state", choices=["created", "running", "exited", "unknown"])
    p = sub.add_parser("update")
    p.add_argument("id")
    p.add_argument("resources")
    p = sub.add_parser("exec-sync")
    p.add_argument("id")
    p.add_argument("--timeout", type=int, default=30)
    p.add_argument("cmd", nargs="+")
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    client = Client(args.sock, args.rpc_timeout)
    try:
        result = COMMANDS[args.command](client, args)
    except RpcFailed as e:
        print("cri.py: %s" % e, file=sys.stderr)
        return RPC_FAILED
    if isinstance(result, int):
        return result
    if result is not None:
        print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
