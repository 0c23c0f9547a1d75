from tritonclient._proto.service_pb2 import *
