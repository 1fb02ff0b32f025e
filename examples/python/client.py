#!/usr/bin/env python3
"""A Source Ledger gRPC client in Python, from stubs generated from proto/ (see README.md here).

It gets a token from the development identity provider (POST /oauth/token, the client-credentials
grant of docs/api.md §3), creates two sources with CreateSources, finds them with ListSources,
reads each with GetSource, deletes one by id and one by alt_id with DeleteSource, then sends an
invalid create and decodes the google.rpc.BadRequest detail from the `grpc-status-details-bin`
trailer with the generated google.rpc.Status and google.rpc.BadRequest classes (so it needs
neither grpcio-status nor googleapis-common-protos).

Exits 0 when every step answers as expected, 1 (with "FAIL: ..." on stderr) otherwise.

    python3 examples/python/client.py --target 127.0.0.1:8080
"""

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
BAD_REQUEST_TYPE_URL = "type.googleapis.com/google.rpc.BadRequest"
UNCLOSED_RING_FIELD = "sources[0].geometry.polygon.rings[0]"


class Failure(Exception):
    """An unexpected outcome: the client says what and exits 1."""


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--target", default="127.0.0.1:8080", help="host:port of the ledger (gRPC over h2c)")
    parser.add_argument(
        "--base-url", help="where POST /oauth/token is (default: http://<target>, the same port)"
    )
    parser.add_argument("--stubs", default=os.environ.get("LEDGER_PY_STUBS", os.path.join(HERE, "gen")),
                        help="directory protoc wrote the stubs into (default: $LEDGER_PY_STUBS or gen/ next to this file)")
    parser.add_argument("--client-id", default="farm-co")
    parser.add_argument("--client-secret", default="local-dev-only-farm-co")
    parser.add_argument("--audience", default="https://source-ledger.local")
    parser.add_argument("--token", default=os.environ.get("LEDGER_TOKEN"),
                        help="a bearer token to use instead of asking the development identity provider")
    parser.add_argument("--sandbox", action="store_true", help="call SandboxSourceLedgerService instead")
    return parser.parse_args()


def dev_token(base_url, client_id, client_secret, audience):
    """A token from the development identity provider (client-credentials grant, docs/api.md §3)."""
    body = json.dumps({
        "client_id": client_id,
        "client_secret": client_secret,
        "audience": audience,
        "grant_type": "client_credentials",
    }).encode()
    request = urllib.request.Request(
        f"{base_url}/oauth/token", data=body, headers={"content-type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            answer = json.load(response)
    except urllib.error.HTTPError as error:
        raise Failure(f"POST {base_url}/oauth/token answered {error.code}: {error.read().decode()[:300]}") from None
    except urllib.error.URLError as error:
        raise Failure(f"POST {base_url}/oauth/token failed: {error.reason}") from None
    if answer.get("token_type") != "Bearer" or not answer.get("access_token"):
        raise Failure(f"unexpected token answer: {answer}")
    return answer["access_token"]


def main():
    args = parse_args()
    # The generated modules (sourceledger.v2.*, google.rpc.*) live in the stubs directory.
    sys.path.insert(0, os.path.abspath(args.stubs))
    import grpc
    from google.protobuf.timestamp_pb2 import Timestamp
    from google.rpc import error_details_pb2, status_pb2
    from sourceledger.v2 import source_ledger_pb2 as pb
    from sourceledger.v2 import source_ledger_pb2_grpc as pb_grpc

    def ts(text):
        stamp = Timestamp()
        stamp.FromJsonString(text)
        return stamp

    def square(lon, lat, size=0.01):
        """A closed square ring: packed lon,lat pairs."""
        corners = [(lon, lat), (lon + size, lat), (lon + size, lat + size), (lon, lat + size), (lon, lat)]
        coordinates = [c for corner in corners for c in corner]
        return pb.Geometry(polygon=pb.Polygon(rings=[pb.LinearRing(coordinates=coordinates)]))

    def expect(condition, what):
        if not condition:
            raise Failure(what)

    token = args.token
    if token:
        print("token: given")
    else:
        base_url = args.base_url or f"http://{args.target}"
        token = dev_token(base_url, args.client_id, args.client_secret, args.audience)
        print(f"token: from {base_url}/oauth/token for client {args.client_id}")
    metadata = (("authorization", f"Bearer {token}"),)

    run = uuid.uuid4().hex[:10]
    project = f"py-{run}"
    alt_ids = [f"py-{run}-north", f"py-{run}-mill"]

    with grpc.insecure_channel(args.target) as channel:
        stub_class = pb_grpc.SandboxSourceLedgerServiceStub if args.sandbox else pb_grpc.SourceLedgerServiceStub
        ledger = stub_class(channel)
        print(f"service: {'sourceledger.v2.SandboxSourceLedgerService' if args.sandbox else 'sourceledger.v2.SourceLedgerService'}")

        # CreateSources: two sources in one all-or-nothing batch.
        created = ledger.CreateSources(
            pb.CreateSourcesRequest(sources=[
                pb.SourceInput(
                    alt_id=alt_ids[0], project_id=project, methodology="VM0042",
                    source_type=pb.SOURCE_TYPE_FIELD, attribute_type=[pb.ATTRIBUTE_TYPE_CARBON_REMOVAL],
                    geometry=square(-93.60, 41.60), start_at=ts("2024-01-01T00:00:00Z"),
                    end_at=ts("2025-01-01T00:00:00Z"),
                ),
                pb.SourceInput(
                    alt_id=alt_ids[1], project_id=project, methodology="ISCC",
                    source_type=pb.SOURCE_TYPE_FACILITY,
                    geometry=square(-93.50, 41.60), start_at=ts("2024-01-01T00:00:00Z"),
                    end_at=ts("2025-01-01T00:00:00Z"),
                ),
            ]),
            metadata=metadata, timeout=10,
        ).sources
        expect([s.alt_id for s in created] == alt_ids, f"created alt_ids {[s.alt_id for s in created]}, sent {alt_ids}")
        ids = [s.id for s in created]
        expect(all(ids), f"created sources without ids: {ids}")
        for source in created:
            print(f"created: {source.id} alt_id={source.alt_id}")

        # ListSources: the two, by the project they share.
        listed = ledger.ListSources(pb.ListSourcesRequest(project_id=project, limit=10), metadata=metadata, timeout=10)
        listed_ids = sorted(s.id for s in listed.sources)
        expect(listed_ids == sorted(ids), f"listed {listed_ids} for project_id {project}, created {sorted(ids)}")
        print(f"listed: {len(listed.sources)} sources with project_id={project}: {' '.join(listed_ids)}")

        # GetSource: each by id.
        for source in created:
            got = ledger.GetSource(pb.GetSourceRequest(id=source.id), metadata=metadata, timeout=10).source
            expect(got.id == source.id and got.alt_id == source.alt_id, f"GetSource({source.id}) answered {got.id} {got.alt_id}")
            rings = len(got.geometry.polygon.rings)
            print(f"fetched: {got.id} alt_id={got.alt_id} source_type={pb.SourceType.Name(got.source_type)} rings={rings}")

        # DeleteSource: the first by id, the second by alt_id; then GetSource is NOT_FOUND.
        ledger.DeleteSource(pb.DeleteSourceRequest(id=ids[0]), metadata=metadata, timeout=10)
        print(f"deleted: {ids[0]} by id")
        ledger.DeleteSource(pb.DeleteSourceRequest(alt_id=alt_ids[1]), metadata=metadata, timeout=10)
        print(f"deleted: {ids[1]} by alt_id={alt_ids[1]}")
        for source_id in ids:
            try:
                ledger.GetSource(pb.GetSourceRequest(id=source_id), metadata=metadata, timeout=10)
            except grpc.RpcError as error:
                expect(error.code() == grpc.StatusCode.NOT_FOUND, f"GetSource({source_id}) after delete: {error.code()}")
                print(f"gone: {source_id} {error.code().name}")
            else:
                raise Failure(f"GetSource({source_id}) still answers after its delete")

        # An invalid create: the exterior ring is not closed (its last position differs from its first).
        unclosed = pb.Geometry(polygon=pb.Polygon(rings=[pb.LinearRing(coordinates=[0, 0, 1, 0, 1, 1, 0, 1, 0, 0.5])]))
        try:
            ledger.CreateSources(
                pb.CreateSourcesRequest(sources=[pb.SourceInput(
                    alt_id=f"py-{run}-bad", geometry=unclosed,
                    start_at=ts("2024-01-01T00:00:00Z"), end_at=ts("2025-01-01T00:00:00Z"),
                )]),
                metadata=metadata, timeout=10,
            )
        except grpc.RpcError as error:
            expect(error.code() == grpc.StatusCode.INVALID_ARGUMENT, f"invalid create answered {error.code()}: {error.details()}")
            print(f"invalid create: {error.code().name}: {error.details()}")
            raw = next((value for key, value in error.trailing_metadata() or () if key == "grpc-status-details-bin"), None)
            expect(raw is not None, "no grpc-status-details-bin trailer")
            status = status_pb2.Status.FromString(raw)
            expect(status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0], f"google.rpc.Status code {status.code}")
            type_urls = [detail.type_url for detail in status.details]
            print(f"details: {' '.join(type_urls)}")
            detail = next((d for d in status.details if d.type_url == BAD_REQUEST_TYPE_URL), None)
            expect(detail is not None, f"no {BAD_REQUEST_TYPE_URL} among {type_urls}")
            bad_request = error_details_pb2.BadRequest()
            expect(detail.Unpack(bad_request), "the detail does not unpack as google.rpc.BadRequest")
            for violation in bad_request.field_violations:
                print(f"violation: {violation.field}: {violation.description}")
            fields = [v.field for v in bad_request.field_violations]
            expect(UNCLOSED_RING_FIELD in fields, f"no violation at {UNCLOSED_RING_FIELD} among {fields}")
        else:
            raise Failure("the invalid create was accepted")

    print("OK: create, list, get, delete and a decoded google.rpc.BadRequest")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as failure:
        print(f"FAIL: {failure}", file=sys.stderr)
        sys.exit(1)
    except Exception as error:  # an RpcError where none was expected, a missing stub, ...
        print(f"FAIL: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
