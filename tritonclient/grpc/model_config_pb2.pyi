from tritonclient._proto.model_config_pb2 import *
