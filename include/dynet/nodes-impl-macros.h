// DYNET_NODE_INST_DEV_IMPL(MyNode) (dynet/nodes-impl-macros.h): after a node's forward_dev_impl and
// backward_dev_impl templates are defined, instantiates them for the CPU and defines forward_impl /
// backward_impl to call them with the tensor's device (a Device_CPU, whose edevice is Eigen's
// DefaultDevice). Other devices throw.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "dynet/devices.h"

#define DYNET_NODE_INST_DEV_IMPL(MyNode)                                                               \
  template void MyNode::forward_dev_impl<dynet::Device_CPU>(                                          \
      const dynet::Device_CPU& dev, const std::vector<const dynet::Tensor*>& xs, dynet::Tensor& fx) const; \
  template void MyNode::backward_dev_impl<dynet::Device_CPU>(                                         \
      const dynet::Device_CPU& dev, const std::vector<const dynet::Tensor*>& xs, const dynet::Tensor& fx, \
      const dynet::Tensor& dEdf, unsigned i, dynet::Tensor& dEdxi) const;                              \
  void MyNode::forward_impl(const std::vector<const dynet::Tensor*>& xs, dynet::Tensor& fx) const {   \
    if (!fx.device || fx.device->type != dynet::DeviceType::CPU)                                       \
      throw std::runtime_error(#MyNode "::forward_impl: not a CPU tensor");                             \
    forward_dev_impl<dynet::Device_CPU>(*static_cast<const dynet::Device_CPU*>(fx.device), xs, fx);   \
  }                                                                                                     \
  void MyNode::backward_impl(const std::vector<const dynet::Tensor*>& xs, const dynet::Tensor& fx,      \
                             const dynet::Tensor& dEdf, unsigned i, dynet::Tensor& dEdxi) const {        \
    if (!fx.device || fx.device->type != dynet::DeviceType::CPU)                                       \
      throw std::runtime_error(#MyNode "::backward_impl: not a CPU tensor");                            \
    backward_dev_impl<dynet::Device_CPU>(*static_cast<const dynet::Device_CPU*>(fx.device), xs, fx, dEdf, i, \
                                         dEdxi);                                                         \
  }
